package rlock

import "context"

// Watching callers' contexts. A call ends when its context does: the calls of one shard that share a context are
// watched by one context.AfterFunc, which abandons them all when the context ends (waiter.abandon).
//
// Why not one AfterFunc per call, or a select on ctx.Done() in the blocking call's Get: services share contexts
// widely (a server's root context, an errgroup's, a worker pool's), and then every call would take that context's
// one mutex to register and unregister its AfterFunc (with three allocations), or the lock of its one Done channel
// twice per parked Get, from every core at once. A watch is registered when the first call of a shard with that
// context starts and unregistered when the last one ends; the calls in between only link themselves into its list
// under the shard mutex, which they take anyway. Package conn watches the contexts of its commands the same way,
// per connection (conn/ctxwatch.go). The caller's future is marked as cancelled by the context
// (future.Promise.CancelledBy), so a blocking call's Get waits for the future alone.

// ctxWatch is the watch of one context in one shard: the calls watching it, and the AfterFunc that abandons them.
type ctxWatch struct {
	sh   *shard
	done <-chan struct{} // the context's Done channel: the key in shard.watches
	head *waiter         // the calls watched, linked through cwPrev/cwNext; guarded by the shard mutex
	stop func() bool     // unregisters the AfterFunc
}

// watchLocked makes w end when ctx ends: it joins the shard's watch of ctx, registering one for ctx first if the
// shard has none. A context that cannot end (Done nil) is not watched. The shard mutex is held; the AfterFunc's
// callback never runs under it (it runs on its own goroutine and takes the mutex).
func (w *waiter) watchLocked(ctx context.Context) {
	done := ctx.Done()
	if done == nil || w.watched {
		return
	}
	w.watched = true
	sh := w.sh
	cw := sh.watches[done]
	if cw == nil {
		if sh.watches == nil {
			sh.watches = make(map[<-chan struct{}]*ctxWatch)
		}
		cw = &ctxWatch{sh: sh, done: done}
		sh.watches[done] = cw
		cw.stop = context.AfterFunc(ctx, func() { cw.fire(ctx.Err()) })
	}
	w.cw, w.cwPrev, w.cwNext = cw, nil, cw.head
	if cw.head != nil {
		cw.head.cwPrev = w
	}
	cw.head = w
}

// unwatchLocked takes w out of its watch (a call that ends). When it was the watch's last call, the watch leaves
// the shard and the returned function, to be called once the shard mutex is released, unregisters its AfterFunc;
// otherwise it returns nil. The shard mutex is held.
func (w *waiter) unwatchLocked() func() bool {
	cw := w.cw
	if cw == nil {
		return nil
	}
	if w.cwPrev != nil {
		w.cwPrev.cwNext = w.cwNext
	} else {
		cw.head = w.cwNext
	}
	if w.cwNext != nil {
		w.cwNext.cwPrev = w.cwPrev
	}
	w.cw, w.cwPrev, w.cwNext = nil, nil, nil
	if cw.head != nil || w.sh.watches[cw.done] != cw {
		return nil
	}
	delete(w.sh.watches, cw.done)
	return cw.stop
}

// fire abandons every call of the watch, whose context ended with err: each leaves its queue, or finishes when its
// command in flight returns, and its future fails with err.
func (cw *ctxWatch) fire(err error) {
	sh := cw.sh
	sh.mu.Lock()
	if sh.watches[cw.done] == cw {
		delete(sh.watches, cw.done)
	}
	var ws []*waiter
	for w := cw.head; w != nil; {
		next := w.cwNext
		w.cw, w.cwPrev, w.cwNext = nil, nil, nil
		w.watchHit = true // referenced from here on: never recycled
		ws = append(ws, w)
		w = next
	}
	cw.head = nil
	sh.mu.Unlock()
	for _, w := range ws {
		w.abandon(err, false)
	}
}

// stopWatchesLocked unregisters every watch of the shard, for Close (the calls they watch are failed by Close or by
// their replies). The shard mutex is held; the returned functions are called after it is released.
func (sh *shard) stopWatchesLocked(stops []func() bool) []func() bool {
	for done, cw := range sh.watches {
		stops = append(stops, cw.stop)
		delete(sh.watches, done)
	}
	return stops
}

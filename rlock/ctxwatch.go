package rlock

import (
	"context"

	"github.com/locksmith-go/locksmith/internal/ctxwatch"
)

// Watching callers' contexts. A call ends when its context does: the calls of one shard that share a context are
// watched by one context.AfterFunc, which abandons them all when the context ends (waiter.abandon). Each shard
// keeps a ctxwatch.Set (see package ctxwatch for why: services share contexts widely, and one AfterFunc per call
// would have every call contend on that context's one mutex); the calls of a watch link themselves into its list
// under the shard mutex, which they take anyway. Package conn watches the contexts of its commands the same way,
// per connection. The caller's future is marked as cancelled by the context (future.Promise.CancelledBy), so a
// blocking call's Get waits for the future alone, not for ctx.Done().

// ctxWatch is the watch of one context in one shard; its Members are the calls watching it, linked through
// waiter.cwPrev and waiter.cwNext.
type ctxWatch = ctxwatch.Watch[*waiter]

// watchLocked makes w end when ctx ends: it joins the shard's watch of ctx. A context that cannot end (Done nil)
// is not watched. The shard mutex is held; the watch's end (shard.ContextEnded) never runs under it.
func (w *waiter) watchLocked(ctx context.Context) {
	if ctx.Done() == nil || w.watched {
		return
	}
	w.watched = true
	cw := w.sh.watches.Join(ctx, w.sh)
	w.cw, w.cwPrev, w.cwNext = cw, nil, cw.Members
	if cw.Members != nil {
		cw.Members.cwPrev = w
	}
	cw.Members = w
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
		cw.Members = w.cwNext
	}
	if w.cwNext != nil {
		w.cwNext.cwPrev = w.cwPrev
	}
	w.cw, w.cwPrev, w.cwNext = nil, nil, nil
	return w.sh.watches.Leave(cw)
}

// ContextEnded abandons every call of the watch cw, whose context ended with err (ctxwatch.Owner): each leaves its
// queue, or finishes when its command in flight returns, and its future fails with err.
func (sh *shard) ContextEnded(cw *ctxWatch, err error) {
	sh.mu.Lock()
	sh.watches.Drop(cw)
	var ws []*waiter
	for w := cw.Members; w != nil; {
		next := w.cwNext
		w.cw, w.cwPrev, w.cwNext = nil, nil, nil
		w.watchHit = true // referenced from here on: never recycled
		ws = append(ws, w)
		w = next
	}
	cw.Members = nil
	sh.mu.Unlock()
	for _, w := range ws {
		w.abandon(err, false)
	}
}

package conn

import (
	"context"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// ctxWatch completes the commands queued on one connection with one context when that context ends, with a single
// context.AfterFunc for all of them.
//
// Why not an AfterFunc per command: registering one costs three allocations and an insertion into the context's
// children map under its mutex, and unregistering it a deletion under the same mutex; when many goroutines issue
// commands with one shared context (a worker pool's or a server's long-lived context, the bench harness's), every
// command contends on that one mutex. Measured on the bench harness's raw workload (bench case -workload raw -lib
// ours-conn -g 1024) with its 1024 goroutines sharing one cancellable context (2 cores, alternated runs, medians
// of 4-5): 8.3-8.5 µs of client CPU per pair with an AfterFunc per command, 6.3-7.2 µs with no watching at all, 6.8
// µs with watches. A watch is counted per connection:
// while commands with that context are in flight on it, new ones only increment a counter (a map lookup under the
// connection's mutex, already held to queue the command); the AfterFunc is unregistered when the count drops to
// zero. A command with a context of its own (a request's) costs one watch: the AfterFunc plus a small struct.
//
// Only standalone connections use watches: on a Sentinel or cluster connection a command can be taken out of the
// fifo and re-sent on another connection (refusals, reconnections), so it carries its own AfterFunc (pending.stop).
type ctxWatch struct {
	done <-chan struct{} // the context's Done channel: the key in pconn.watches
	refs int             // fifo entries carrying this watch; under pconn.mu
	stop func() bool     // unregisters the AfterFunc
}

// watchLocked returns the watch of ctx on pc, creating it (and registering its AfterFunc) on first use, and counts
// one more command on it. ctx.Done() must be non-nil. mu held.
func (pc *pconn) watchLocked(ctx context.Context) *ctxWatch {
	done := ctx.Done()
	if w := pc.watches[done]; w != nil {
		w.refs++
		return w
	}
	if pc.watches == nil {
		pc.watches = make(map[<-chan struct{}]*ctxWatch)
	}
	w := &ctxWatch{done: done, refs: 1}
	pc.watches[done] = w
	// The callback runs on a goroutine of its own (AfterFunc's), never under mu: it may lock mu.
	w.stop = context.AfterFunc(ctx, func() { pc.cancelWatch(w, ctx.Err()) })
	return w
}

// unwatchLocked counts one command of w less (its reply arrived); when none is left, w leaves the map and its
// AfterFunc must be unregistered: the returned function, called after mu is released (nil if none). mu held.
func (pc *pconn) unwatchLocked(w *ctxWatch) func() bool {
	w.refs--
	if w.refs == 0 && pc.watches[w.done] == w {
		delete(pc.watches, w.done)
		return w.stop
	}
	return nil
}

// cancelWatch runs when w's context ends: every command still awaiting its reply with that context completes with
// err at once; the replies, when they come, are read and discarded in order. Commands queued later with the same
// (ended) context get a new watch, whose AfterFunc runs at once.
func (pc *pconn) cancelWatch(w *ctxWatch, err error) {
	pc.mu.Lock()
	if pc.watches[w.done] == w {
		delete(pc.watches, w.done)
	}
	var ps []*future.Promise[resp.Value]
	pc.q.each(func(e *pending) {
		if e.watch == w && e.kind == kindUser && e.p != nil {
			ps = append(ps, e.p)
		}
	})
	pc.mu.Unlock()
	for _, p := range ps {
		pc.complete(p, resp.Value{}, err)
	}
}

// takeWatchesLocked empties the connection's watches (it is closing) and returns their AfterFuncs' unregister
// functions, to call after mu is released.
func (pc *pconn) takeWatchesLocked() []func() bool {
	if len(pc.watches) == 0 {
		return nil
	}
	stops := make([]func() bool, 0, len(pc.watches))
	for _, w := range pc.watches {
		stops = append(stops, w.stop)
	}
	pc.watches = nil
	return stops
}

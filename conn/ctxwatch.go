package conn

import (
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/internal/ctxwatch"
	"github.com/locksmith-go/locksmith/resp"
)

// A standalone connection completes the commands queued on it with one context when that context ends, with a
// single context.AfterFunc for all of them: pconn.watches, a ctxwatch.Set (see package ctxwatch for why). While
// commands with a context are in flight on the connection, new ones only count themselves in (under the
// connection's mutex, already held to queue the command); the AfterFunc is unregistered when the last reply is in.
//
// Only standalone connections use watches: on a Sentinel or cluster connection a command can be taken out of the
// fifo and re-sent on another connection (refusals, reconnections), so it carries its own AfterFunc (pending.stop).

// ctxWatch is a connection's watch of one context; the fifo entries carrying it are its members, found by a scan
// of the fifo when the context ends.
type ctxWatch = ctxwatch.Watch[struct{}]

// ContextEnded runs when the context of w ends (ctxwatch.Owner): every command still awaiting its reply with that
// context completes with err at once; the replies, when they come, are read and discarded in order. Commands
// queued later with the same (ended) context get a new watch, whose AfterFunc runs at once.
func (pc *pconn) ContextEnded(w *ctxWatch, err error) {
	pc.mu.Lock()
	pc.watches.Drop(w)
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

package conn

import (
	"context"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// pendingKind says who waits for a reply and what to do with it.
type pendingKind uint8

const (
	kindUser        pendingKind = iota // a caller's command: complete its promise
	kindPing                           // the health check's PING: nothing to complete
	kindScriptLoad                     // SCRIPT LOAD sent after a NOSCRIPT: clears the connection's load marker
	kindSubscribe                      // pub/sub SUBSCRIBE of a channel: confirm its waiters
	kindResubscribe                    // SUBSCRIBE sent again on a new pub/sub connection: also tell the handlers
	kindUnsubscribe                    // pub/sub UNSUBSCRIBE: nothing to complete
	kindResent                         // marks a popped entry already re-queued (NOSCRIPT) or handed to the router: skip it
	kindAsking                         // ASKING before a command sent after an ASK redirection: nothing to complete
	kindSyncWait                       // the WAIT after a SendAndWait command: completes its syncOp
)

// pending is one command awaiting its reply. Entries are stored by value in the connection's fifo, so queueing a
// command allocates nothing beyond the caller's promise.
type pending struct {
	p     *future.Promise[resp.Value] // kindUser: the caller's promise (nil when op is set)
	kind  pendingKind
	tries uint8 // NOSCRIPT resends so far
	moves uint8 // MOVED and ASK redirections followed so far (cluster)
	waits uint8 // delayed retries so far (Sentinel, cluster): TRYAGAIN, CLUSTERDOWN, LOADING, READONLY, unreachable
	gen   uint8 // with op: the attempt this entry belongs to (see syncOp)
	// driven: p's driver is this connection's laneReader, so a Get on p reads the reply itself (latency lane);
	// an undriven command queued on the lane makes its background reader read.
	driven bool
	slot   int16 // the command's hash slot in a cluster, -1 for none (keyless, or not a cluster)

	// script names the script of an EVALSHA (kindUser) or of a SCRIPT LOAD (kindScriptLoad). For an EVALSHA, the
	// encoded command is also kept in the connection's scriptLog at [logPos, logPos+logLen), so that it can be
	// re-sent byte for byte after NOSCRIPT without retaining (and so without heap-allocating) the caller's
	// arguments.
	script *Script
	logPos uint64
	logLen int

	// stop unregisters the context.AfterFunc that completes p when the caller's context ends; nil when the
	// context cannot end.
	stop func() bool
	// watch is the connection's watch of the command's context (standalone connections: see ctxWatch), instead
	// of stop; nil when the context cannot end.
	watch *ctxWatch

	ch *channel // kindSubscribe, kindResubscribe, kindUnsubscribe: the pub/sub channel

	// op is set for the command and the WAIT of a SendAndWait: their replies complete op instead of p.
	op *syncOp
}

// done reports whether the caller's future is already complete (its context ended, or it failed), so that the
// command need not be sent again.
func (e *pending) done() bool {
	if e.op != nil {
		return e.op.p.Future().IsDone()
	}
	return e.p.Future().IsDone()
}

// fifo is a growable ring of pending entries in the order their commands were written: replies complete them
// from the head. Not safe for concurrent use: the connection guards it with its mutex.
type fifo struct {
	buf  []pending // len is zero or a power of two
	head int
	n    int
}

// push appends e at the tail.
func (q *fifo) push(e pending) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = e
	q.n++
}

// popInto moves the k oldest entries to the end of dst and returns it; k must not exceed q.n.
func (q *fifo) popInto(dst []pending, k int) []pending {
	mask := len(q.buf) - 1
	for ; k > 0; k-- {
		e := &q.buf[q.head]
		dst = append(dst, *e)
		*e = pending{} // drop references for the garbage collector
		q.head = (q.head + 1) & mask
		q.n--
	}
	if q.n == 0 {
		q.head = 0
	}
	return dst
}

// each calls f on every entry, oldest first, in place.
func (q *fifo) each(f func(e *pending)) {
	for i := 0; i < q.n; i++ {
		f(&q.buf[(q.head+i)&(len(q.buf)-1)])
	}
}

// grow doubles the ring (16 entries at first), keeping the order.
func (q *fifo) grow() {
	size := 2 * len(q.buf)
	if size == 0 {
		size = 16
	}
	buf := make([]pending, size)
	for i := 0; i < q.n; i++ {
		buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = buf, 0
}

// afterCancel arranges for p to complete with ctx's error when ctx ends first, and returns the function that
// unregisters that (nil when ctx can never end: no cost at all for context.Background). The late reply of such a
// command is still read and discarded in order, so the pipeline stays in step.
func afterCancel(ctx context.Context, p *future.Promise[resp.Value]) func() bool {
	done := ctx.Done()
	if done == nil {
		return nil
	}
	// A Get with the same context then waits on the future alone (see future.Promise.CancelledBy).
	p.CancelledBy(done)
	return context.AfterFunc(ctx, func() { p.Fail(ctx.Err()) })
}

package rlock

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/timer"
)

// This file holds the client-side state shared by the lock family (fair, fenced and read-write locks, semaphores,
// the latch): the waiting calls and their channel subscriptions, the held family locks and their watchdog. It is
// named after the semaphore, the simplest member that needs all of it.
//
// The family starts no goroutine. A waiting call is a struct driven by script replies, pub/sub messages and one
// timeout on the client's timer; a held lock is a struct with one timeout; renewals go out in batches.

// family is one Client's state for the lock family. Obtain it with Client.fam.
type family struct {
	c *Client

	mu     sync.Mutex // guards the fields below and the fields documented "guarded by the family mutex"
	chans  map[string]*famChannel
	waits  map[*famWait]struct{} // every call in progress, so that Close can fail it
	holds  map[famHoldKey]*famHold
	closed bool

	wd famWatchdog
}

// families maps each Client to its family state. The state lives beside the Client rather than in it because the
// Client's struct belongs to the lock core's files; an entry is created on first use and removed by closeFamily.
var families sync.Map // *Client -> *family

// fam returns c's family state, creating it on first use. It does not block on I/O. After Close it returns a
// closed state that is not kept (every call on it reports ErrClosed).
func (c *Client) fam() *family {
	if f, ok := families.Load(c); ok {
		return f.(*family)
	}
	nf := &family{c: c, chans: make(map[string]*famChannel), waits: make(map[*famWait]struct{}),
		holds: make(map[famHoldKey]*famHold)}
	nf.wd.f = nf
	if c.closed.Load() {
		nf.closed = true
		return nf
	}
	f, _ := families.LoadOrStore(c, nf)
	if c.closed.Load() {
		// Close ran between the check and the store: do not keep the entry.
		closeFamily(c)
	}
	return f.(*family)
}

// closeFamily fails every waiting family call with ErrClosed, cancels the held contexts of the family's locks
// with cause ErrClosed (their leases run out on the server, as Client.Close documents for the plain lock), stops
// their renewals and closes the family's subscriptions. Client.Close calls it before closing the transport.
func closeFamily(c *Client) {
	v, ok := families.LoadAndDelete(c)
	if !ok {
		return
	}
	f := v.(*family)
	f.mu.Lock()
	f.closed = true
	var waits []*famWait
	var subs []*conn.Subscription
	for w := range f.waits {
		w.stopTimerLocked()
		w.state = fwDone
		w.prev, w.next, w.ch = nil, nil, nil
		waits = append(waits, w)
	}
	clear(f.waits)
	for name, ch := range f.chans {
		ch.head, ch.tail, ch.n, ch.dead = nil, nil, 0, true
		if ch.sub != nil {
			subs = append(subs, ch.sub)
		}
		delete(f.chans, name)
	}
	var holds []*famHold
	for k, h := range f.holds {
		h.state = famHoldGone
		h.stopTimerLocked()
		holds = append(holds, h)
		delete(f.holds, k)
	}
	f.mu.Unlock()
	f.wd.stop()
	for _, w := range waits {
		w.run.fail(ErrClosed)
	}
	for _, h := range holds {
		h.cancel(ErrClosed)
	}
	for _, s := range subs {
		s.Close()
	}
}

// isClosed reports whether the client or its family was closed.
func (f *family) isClosed() bool { return f.c.closed.Load() }

// famMillis formats a duration as whole milliseconds for a script argument.
func famMillis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// call runs a command that is safe to send again (a query, an idempotent or conditional script), retrying
// transport failures up to RetryAttempts times after RetryDelay on the client's timer. ctx bounds each attempt
// and the retries.
func (f *family) call(ctx context.Context, s *conn.Script, keys []string, args ...string) *future.Future[resp.Value] {
	p := future.NewPromise[resp.Value]()
	f.callAttempt(ctx, s, keys, args, p, 0, true)
	return p.Future()
}

// callOnce runs a command that must not run twice (a count-down, a permit acquire): it is resent only when it was
// never sent (conn.ErrUnavailable).
func (f *family) callOnce(ctx context.Context, s *conn.Script, keys []string, args ...string) *future.Future[resp.Value] {
	p := future.NewPromise[resp.Value]()
	f.callAttempt(ctx, s, keys, args, p, 0, false)
	return p.Future()
}

func (f *family) callAttempt(ctx context.Context, s *conn.Script, keys, args []string, p *future.Promise[resp.Value],
	n int, idempotent bool) {
	c := f.c
	var fut *future.Future[resp.Value]
	if s != nil {
		fut = c.conn.Eval(ctx, s, keys, args...)
	} else {
		fut = c.conn.Do(ctx, args...)
	}
	fut.OnComplete(func(v resp.Value, err error) {
		if err != nil && n < c.cfg.RetryAttempts && !f.isClosed() && ctx.Err() == nil &&
			(errors.Is(err, conn.ErrUnavailable) || (idempotent && errors.Is(err, conn.ErrConnLost))) {
			_, terr := c.timer.NewTimeout(timer.TaskFunc(func(*timer.Timeout) {
				f.callAttempt(ctx, s, keys, args, p, n+1, idempotent)
			}), c.cfg.RetryDelay)
			if terr == nil {
				return
			}
		}
		p.Complete(v, famErr(err))
	})
}

// famErr maps the transport's "client closed" to this package's.
func famErr(err error) error {
	if errors.Is(err, conn.ErrClosed) {
		return ErrClosed
	}
	return err
}

// famInt decodes an integer reply.
func famInt(v resp.Value, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	n, err := v.AsInt64()
	if errors.Is(err, resp.ErrNil) {
		return 0, nil
	}
	return n, err
}

// famCheck validates a family object's name and the client for a call.
func famCheck(c *Client, op, name string) error {
	if name == "" {
		return &ArgumentError{Op: op, Arg: "name", Value: `""`, Reason: "must not be empty"}
	}
	if c.closed.Load() {
		return ErrClosed
	}
	return nil
}

package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/timer"
)

// Unlock releases one hold of the lock by the owner that held carries (the context an acquire returned, or one
// made with WithOwner). When it was the last hold, the lock is deleted and the unlock message published — or, when
// a waiter of this client is queued for the lock, the lock goes straight to that waiter in the same round trip —
// and held is cancelled with cause ErrReleased.
//
// The renewal stops at the start of the call, so no renewal outlives an Unlock. Unlock waits for the server's
// answer, bounded by the transport's response timeout and RetryAttempts retries (a release is safe to retry: see
// the package documentation); held's cancellation does not cut it short. It returns ErrNotHeld when the owner does
// not hold the lock (another owner does, or it expired or was force-unlocked: the held context then also has
// cause ErrLockLost), ErrClosed, an *ArgumentError, or a transport error. Safe for concurrent use.
func (l *Lock) Unlock(held context.Context) error {
	_, err := l.UnlockAsync(held).Get(background)
	return err
}

// UnlockAsync is the asynchronous form of Unlock. The renewal is cancelled before it returns.
func (l *Lock) UnlockAsync(held context.Context) *future.Future[struct{}] {
	c := l.c
	if l.name == "" {
		return future.Completed(struct{}{}, nameError("Unlock"))
	}
	if c.closed.Load() {
		return future.Completed(struct{}{}, ErrClosed)
	}
	own, err := c.resolveOwner(held, "Unlock", false)
	if err != nil {
		return future.Completed(struct{}{}, err)
	}
	if own.id == "" {
		return future.Completed(struct{}{}, ErrNotHeld)
	}
	return c.unlock(l.keys, l.sh, own.id)
}

// unlockHeld releases one hold of a lock granted to a call whose caller will never see it (the call was abandoned
// while the grant was in flight). Errors are logged.
func (c *Client) unlockHeld(held context.Context) {
	h, ok := held.Value(ownerKey{}).(*hold)
	if !ok || c.closed.Load() {
		return
	}
	c.unlock([]string{h.name, channelName(h.name)}, c.shard(h.name), h.owner).OnComplete(func(_ struct{}, err error) {
		if err != nil && !errors.Is(err, ErrClosed) {
			c.log.Warn("rlock: releasing a lock granted to an abandoned acquire failed; it ends with its lease",
				"lock", h.name, "owner", h.owner, "err", err)
		}
	})
}

// releaseOrphan releases count holds granted to w's owner that no hold records (the client closed meanwhile, the
// timer refused the hold's timeout, or a fresh owner's attempt failed ambiguously). Errors are logged.
func (c *Client) releaseOrphan(w *waiter, count int64) {
	if c.closed.Load() {
		return
	}
	c.conn.Eval(background, releaseScript, w.lk.keys, w.own.id, strconv.FormatInt(count, 10), w.leaseArg,
		unlockMessage).OnComplete(func(_ resp.Value, err error) {
		if err != nil {
			c.log.Warn("rlock: releasing an orphaned grant failed; it ends with its lease",
				"lock", w.lk.name, "owner", w.own.id, "err", err)
		}
	})
}

// unlockOp is one Unlock in progress. Its future is the caller's; acquirers of the same owner wait on it while the
// last hold is being released (see Client.start).
type unlockOp struct {
	p    future.Promise[struct{}]
	c    *Client
	keys []string
	sh   *shard
	own  string
	h    *hold   // the local hold, nil when this client records none for the owner
	next *waiter // hand-off target (state wGranting), or nil

	expect   int64  // hold count the owner is expected to have; 0: unknown (no local hold)
	lease    string // lease re-armed by a partial release
	final    bool   // releases the last local hold: h is holdReleasing
	attempts int    // retries made
	retried  bool   // an earlier attempt may have run on the server
	adopted  bool   // expect was corrected from the server's count once
	sentAt   time.Duration
}

// unlock starts the release of one hold of (keys[0], own).
func (c *Client) unlock(keys []string, sh *shard, own string) *future.Future[struct{}] {
	op := &unlockOp{c: c, keys: keys, sh: sh, own: own}
	sh.mu.Lock()
	h := sh.holds[holdKey{keys[0], own}]
	switch {
	case h == nil || h.state != holdHeld:
		// Nothing recorded here: the owner may hold it through another client (WithOwner). Unconditional.
		op.lease = c.cfg.watchdogMillis
	case h.count > 1:
		op.h, op.expect, op.lease = h, int64(h.count), c.leaseArg(h.lease)
		h.count--
	default:
		op.h, op.expect, op.lease, op.final = h, int64(h.count), c.leaseArg(h.lease), true
		// Cancel the renewal first (Redisson #7272): nothing renews this lock once its release has started.
		h.state = holdReleasing
		h.stopTimerLocked()
		h.release = op
		if q := sh.queues[keys[0]]; q != nil {
			op.next = q.takeForHandoffLocked()
		}
	}
	sh.mu.Unlock()
	op.send()
	return op.p.Future()
}

// leaseArg formats a lease for a script, without allocating for the watchdog timeout.
func (c *Client) leaseArg(d time.Duration) string {
	if d == c.cfg.WatchdogTimeout {
		return c.cfg.watchdogMillis
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

func (op *unlockOp) send() {
	c := op.c
	op.sentAt = c.now()
	exp := strconv.FormatInt(op.expect, 10) // small counts come from strconv's static table: no allocation
	if op.next != nil {
		c.conn.Eval(background, handoffScript, op.keys, op.own, exp, op.lease, unlockMessage, op.next.own.id,
			op.next.leaseArg).OnComplete(op.onHandoff)
		return
	}
	c.conn.Eval(background, releaseScript, op.keys, op.own, exp, op.lease, unlockMessage).OnComplete(op.onRelease)
}

// retry resends the release after a transport failure when that is safe: always when it was never sent, and after
// an ambiguous failure only when the release is conditional on the expected count (a retry of an attempt that ran
// then changes nothing).
func (op *unlockOp) retry(err error) bool {
	c := op.c
	if c.closed.Load() || op.attempts >= c.cfg.RetryAttempts {
		return false
	}
	ambiguous := errors.Is(err, conn.ErrConnLost)
	if !errors.Is(err, conn.ErrUnavailable) && !(ambiguous && op.expect > 0) {
		return false
	}
	op.attempts++
	if ambiguous {
		op.retried = true
	}
	_, terr := c.timer.NewTimeout(timer.TaskFunc(func(*timer.Timeout) { op.send() }), c.cfg.RetryDelay)
	return terr == nil
}

// releaseOutcome interprets a releaseSrc reply (or a hand-off's first element): released (the last hold went),
// err (ErrNotHeld), or resend (the expected count was corrected from the server's: send again).
func (op *unlockOp) releaseOutcome(v resp.Value) (released bool, err error, resend bool) {
	switch {
	case v.Null:
		if op.retried && op.expect == 1 {
			return true, nil, false // an earlier attempt deleted it
		}
		return false, ErrNotHeld, false
	case v.Type != resp.Integer:
		return false, &resp.TypeError{Want: "release result", Got: v.Type}, false
	case v.Int < 0:
		if op.retried {
			return false, nil, false // an earlier attempt decremented it
		}
		if !op.adopted {
			// The owner holds a different count than this client recorded (it also holds the lock through
			// another client): release one of the holds the server has.
			op.adopted = true
			op.expect = -v.Int
			return false, nil, true
		}
		return false, fmt.Errorf("%w: the hold count keeps changing under another client of the same owner", ErrNotHeld), false
	case v.Int == 1:
		return true, nil, false
	}
	return false, nil, false
}

func (op *unlockOp) onRelease(v resp.Value, err error) {
	if err != nil {
		if op.retry(err) {
			return
		}
		op.finish(false, op.c.mapErr(err))
		return
	}
	released, rerr, resend := op.releaseOutcome(v)
	if resend {
		op.send()
		return
	}
	op.finish(released, rerr)
}

func (op *unlockOp) onHandoff(v resp.Value, err error) {
	next := op.next
	if err == nil && (v.Type != resp.Array || len(v.Elems) != 2) {
		err = &resp.TypeError{Want: "[release, grant]", Got: v.Type}
	}
	if err != nil {
		if op.retry(err) {
			return
		}
		err = op.c.mapErr(err)
		op.finish(false, err)
		next.onResult(acqResult{err: err}, true)
		return
	}
	released, rerr, resend := op.releaseOutcome(v.Elems[0])
	if resend {
		// Nothing was done: release the corrected count the ordinary way; the waiter goes back to waiting.
		op.next = nil
		next.onResult(acqResult{skipped: true}, true)
		op.send()
		return
	}
	op.finish(released, rerr)
	next.onResult(parseAcquire(v.Elems[1], nil), true)
}

// finish records the outcome locally, cancels the held context of a last hold, and completes the caller's future.
func (op *unlockOp) finish(released bool, err error) {
	c, sh, h := op.c, op.sh, op.h
	var cause, lostCause error
	if h != nil {
		sh.mu.Lock()
		switch {
		case op.final:
			h.state = holdGone
			h.release = nil
			if sh.holds[holdKey{h.name, h.owner}] == h {
				delete(sh.holds, holdKey{h.name, h.owner})
			}
			cause = ErrReleased
			if errors.Is(err, ErrNotHeld) {
				cause = ErrLockLost
			}
		case h.state != holdHeld:
		case err == nil:
			h.deadline = op.sentAt + h.lease // a partial release re-arms the lease
		case errors.Is(err, ErrNotHeld):
			c.dropLocked(sh, h)
			lostCause = ErrLockLost
		}
		sh.mu.Unlock()
	}
	if cause != nil {
		h.cancel(cause)
		c.obs.Released(ReleasedEvent{Name: h.name, Owner: h.owner, Held: c.now() - h.acquired,
			HandOff: op.next != nil && released, Err: err})
	}
	if lostCause != nil {
		c.lost(h, lostCause)
	}
	op.p.Complete(struct{}{}, err)
}

// mapErr turns the transport's "client closed" into this package's.
func (c *Client) mapErr(err error) error {
	if errors.Is(err, conn.ErrClosed) {
		return ErrClosed
	}
	return err
}

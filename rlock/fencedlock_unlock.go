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

// famUnlockOp is one release of one hold of a family lock (fair, fenced, read or write). It follows the plain
// lock's Unlock: the renewal stops at the start, the release is conditional on the hold count this client knows
// the owner has (safe to resend after an ambiguous failure), the held context is cancelled with ErrReleased when
// the last hold goes (ErrLockLost when the server no longer had it).
type famUnlockOp struct {
	p       future.Promise[struct{}]
	f       *family
	key     famHoldKey
	release famReleaseFunc
	h       *famHold // nil when this client records no hold for the owner

	expect   int64
	lease    string
	final    bool
	attempts int
	retried  bool
	adopted  bool
	sentAt   time.Duration
}

// unlock starts the release of one hold of key, with rel building the command. It does not block.
func (f *family) unlock(key famHoldKey, rel famReleaseFunc) *future.Future[struct{}] {
	op := &famUnlockOp{f: f, key: key, release: rel}
	f.mu.Lock()
	h := f.holds[key]
	switch {
	case h == nil || h.state != famHoldHeld:
		op.lease = famMillis(f.c.cfg.WatchdogTimeout)
	case h.count > 1:
		op.h, op.expect, op.lease = h, h.count, famMillis(h.lease)
		h.count--
	default:
		op.h, op.expect, op.lease, op.final = h, h.count, famMillis(h.lease), true
		// Nothing renews this hold once its release has started (Redisson #7272).
		h.state = famHoldReleasing
		h.stopTimerLocked()
	}
	f.mu.Unlock()
	op.send()
	return op.p.Future()
}

// unlockHeld releases one hold through the held context's own hold (used to give back a grant nobody will see).
func (f *family) unlockHeld(held context.Context) {
	h, ok := held.Value(famHoldCtxKey{}).(*famHold)
	if !ok || f.isClosed() {
		return
	}
	f.unlock(h.key, h.release).OnComplete(func(_ struct{}, err error) {
		if err != nil && !errors.Is(err, ErrClosed) {
			f.c.log.Warn("rlock: releasing a lock granted to an abandoned call failed; it ends with its lease",
				"lock", h.key.name, "owner", h.key.owner, "err", err)
		}
	})
}

func (op *famUnlockOp) send() {
	op.sentAt = op.f.c.now()
	cmd := op.release(op.key.owner, op.expect, op.lease)
	op.f.c.conn.Eval(background, cmd.Script, cmd.Keys, cmd.Args...).OnComplete(op.onReply)
}

// retry resends after a transport failure when that is safe: when it was never sent, or when the release is
// conditional on the expected count (a resend of an attempt that ran then changes nothing).
func (op *famUnlockOp) retry(err error) bool {
	c := op.f.c
	if op.f.isClosed() || op.attempts >= c.cfg.RetryAttempts {
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

func (op *famUnlockOp) onReply(v resp.Value, err error) {
	if err != nil {
		if op.retry(err) {
			return
		}
		op.finish(famErr(err))
		return
	}
	switch {
	case v.Null:
		if op.retried && op.expect == 1 {
			op.finish(nil) // an earlier attempt released it
			return
		}
		op.finish(ErrNotHeld)
	case v.Type != resp.Integer:
		op.finish(&resp.TypeError{Want: "release result", Got: v.Type})
	case v.Int < 0:
		if op.retried {
			op.finish(nil) // an earlier attempt decremented it
			return
		}
		if !op.adopted {
			// The owner holds a different count than this client recorded (it holds the lock through another
			// client too): release one of the holds the server has.
			op.adopted = true
			op.expect = -v.Int
			op.send()
			return
		}
		op.finish(fmt.Errorf("%w: the hold count keeps changing under another client of the same owner", ErrNotHeld))
	default:
		op.finish(nil)
	}
}

// finish records the outcome locally and completes the caller's future.
func (op *famUnlockOp) finish(err error) {
	f, h := op.f, op.h
	var cause error
	var lost bool
	if h != nil {
		f.mu.Lock()
		switch {
		case op.final:
			h.state = famHoldGone
			if f.holds[h.key] == h {
				delete(f.holds, h.key)
			}
			cause = ErrReleased
			if errors.Is(err, ErrNotHeld) {
				cause = ErrLockLost
			}
		case h.state != famHoldHeld:
		case err == nil:
			if h.key.kind == famKindLock {
				h.deadline = op.sentAt + h.lease // a partial release re-arms the lease
			}
		case errors.Is(err, ErrNotHeld):
			f.dropLocked(h)
			lost = true
		}
		f.mu.Unlock()
	}
	if cause != nil {
		h.cancel(cause)
		f.c.obs.Released(ReleasedEvent{Name: h.key.name, Owner: h.key.owner, Held: f.c.now() - h.acquired, Err: err})
	}
	if lost {
		f.lost(h, ErrLockLost)
	}
	op.p.Complete(struct{}{}, err)
}

// famOwnerFor resolves the owner a held context releases as, for an Unlock of a family lock.
func famOwnerFor(c *Client, held context.Context, op string) (string, error) {
	own, err := c.resolveOwner(held, op, false)
	if err != nil {
		return "", err
	}
	if own.id == "" {
		return "", ErrNotHeld
	}
	return own.id, nil
}

// famLeaseArgs validates an acquire's lease (0 = the watchdog) and returns the lease to apply and whether the
// watchdog renews it.
func famLeaseArgs(c *Client, op string, lease time.Duration) (time.Duration, bool, error) {
	switch {
	case lease == 0:
		return c.cfg.WatchdogTimeout, true, nil
	case lease < MinLease:
		return 0, false, &ArgumentError{Op: op, Arg: "lease", Value: lease.String(),
			Reason: "must be at least 1ms, or 0 for the watchdog"}
	}
	return lease, false, nil
}

// famWaitArg validates a wait: negative is refused (the blocking Lock forms wait without bound).
func famWaitArg(op string, wait time.Duration) error {
	if wait < 0 {
		return &ArgumentError{Op: op, Arg: "wait", Value: wait.String(), Reason: "must not be negative (0 makes one attempt)"}
	}
	return nil
}

// famPTTLRetry turns a refusal's PTTL into a wait bound: a key without expiry is retried every famNoSignalRetry.
func famPTTLRetry(ms int64) time.Duration {
	if ms < 0 {
		return famNoSignalRetry
	}
	return time.Duration(ms) * time.Millisecond
}

// famCount formats a hold count for a script argument.
func famCount(n int64) string { return strconv.FormatInt(n, 10) }

package rlock

import (
	"context"
	"time"

	"github.com/locksmith-go/locksmith/future"
)

// Lock is a handle on one reentrant lock, Redisson's RLock: a HASH named after the lock whose field is the owner
// and whose value is the hold count, with a lease (PEXPIRE). Obtain it from Client.Lock; it is cheap, holds no
// state of its own (the client keeps the held locks and the waiters) and is safe for concurrent use.
//
// Every operation has an Async form returning a future; the blocking form is the Async call followed by Get.
// Acquiring returns the held context: it carries the owner (acquire again with it to re-enter, unlock with it to
// release) and is cancelled, with a cause, when the lock stops being held (see the package documentation).
type Lock struct {
	lockObject
}

// Name returns the lock's name (its Redis key).
func (l *Lock) Name() string { return l.name }

// Lock acquires the lock with the watchdog: the lease is the client's WatchdogTimeout, renewed every third of it
// while the lock is held, so the lock lasts until Unlock, or until the process dies plus at most the watchdog
// timeout. It blocks until the lock is held or ctx ends; waiting costs no polling (see the package documentation,
// "Waiting").
//
// It returns the held context (see Lock), or ctx's error when ctx ended first (a grant that raced with the end
// of ctx is released), an *OutcomeUnknownError when an attempt was sent but its reply was lost (the caller holds
// nothing; what the server may have granted is being released: see the package documentation, "Release and
// retries"), ErrClosed, an *ArgumentError, or a transport or server error. If ctx already carries an owner that
// holds this lock, the call re-enters it (hold count + 1) and returns the context of that hold; a re-entry whose
// outcome is unknown leaves the hold count as it was.
func (l *Lock) Lock(ctx context.Context) (context.Context, error) {
	return l.lock(ctx, formLock, -1, 0)
}

// LockAsync is the asynchronous form of Lock: it returns at once with a future completed with the held context.
// It starts no goroutine: the wait is driven by replies, unlock messages and the client's timer. When ctx ends
// first, the future fails with ctx's error (and a lock granted in flight is released); a lock granted before that
// belongs to the future's holder.
//
// ctx is the acquire's own context; the context given to the future's Get bounds only that wait. When Get gives up,
// the acquire goes on: a lock it is granted later is held (and renewed by the watchdog) for the future's holder
// until unlocked. To abandon the acquire, cancel ctx; the future then fails with ctx's error, unless the lock was
// granted just before, which the future reports — give that one back:
//
//	acq, abandon := context.WithCancel(ctx)
//	f := l.LockAsync(acq)
//	held, err := f.Get(waitCtx) // waitCtx ended: the acquire is still going on
//	if err != nil && waitCtx.Err() != nil {
//		abandon()
//		f.OnComplete(func(held context.Context, err error) {
//			if err == nil {
//				l.UnlockAsync(held) // granted before the cancellation
//			}
//		})
//	}
func (l *Lock) LockAsync(ctx context.Context) *future.Future[context.Context] {
	return l.lockAsync(ctx, formLock, -1, 0)
}

// LockLease acquires the lock for a fixed lease, without the watchdog: the lock ends on the server when the lease
// runs out, and the held context is cancelled with ErrLeaseExpired just before that. lease must be at least 1 ms.
// It blocks like Lock.
func (l *Lock) LockLease(ctx context.Context, lease time.Duration) (context.Context, error) {
	return l.lock(ctx, formLockLease, -1, lease)
}

// LockLeaseAsync is the asynchronous form of LockLease.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (l *Lock) LockLeaseAsync(ctx context.Context, lease time.Duration) *future.Future[context.Context] {
	return l.lockAsync(ctx, formLockLease, -1, lease)
}

// TryLock acquires the lock if it can within wait: wait 0 makes one attempt. lease 0 takes the watchdog, a
// positive lease (at least 1 ms) a fixed lease as LockLease. It returns ErrNotAcquired when the wait ran out, and
// ctx's error when ctx ended first; otherwise as Lock. A wait that runs out while an attempt is in flight waits up
// to 250 ms for its reply; without one, it returns an *OutcomeUnknownError, never ErrNotAcquired.
func (l *Lock) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	return l.lock(ctx, formTryLock, wait, lease)
}

// TryLockAsync is the asynchronous form of TryLock.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (l *Lock) TryLockAsync(ctx context.Context, wait, lease time.Duration) *future.Future[context.Context] {
	return l.lockAsync(ctx, formTryLock, wait, lease)
}

// Unlock releases one hold of the lock by the owner that held carries (the context an acquire returned, or one
// made with WithOwner). When it was the last hold, the lock is deleted and the unlock message published — or, when
// a waiter of this client is queued for the lock, the lock goes straight to that waiter in the same round trip —
// and held is cancelled with cause ErrReleased.
//
// The renewal stops at the start of the call, so no renewal outlives an Unlock. It returns nil once the server
// released the hold; ErrNotHeld when the owner does not hold the lock; an error matching ErrLockLost (or
// ErrLeaseExpired) and ErrNotHeld when held held the lock but lost it before the Unlock (it expired or was
// force-unlocked); a *NotLockError when the name is used by a key of another type; ErrClosed, an
// *ArgumentError, or a transport error. Safe for concurrent use.
//
// Unlock takes no context and waits for the server's answer: a release cut short would leave unknown whether the
// lock is still held. held's cancellation does not cut it short either. A release is safe to retry (see the
// package documentation), so a transport failure is retried RetryAttempts times after RetryDelay, each attempt
// bounded by conn.Config.ResponseTimeout. Against a server that stops answering, Unlock therefore returns after
// (RetryAttempts+1) × ResponseTimeout + RetryAttempts × RetryDelay at worst: 12.6 s with the defaults (4 × 3 s +
// 3 × 200 ms), measured against a SIGSTOPped redis-server. To bound the caller's wait instead, use the async form:
//
//	_, err := l.UnlockAsync(held).Get(ctx) // ctx's error if ctx ends first
//
// Get then returns when ctx ends while the release goes on in the background: the renewal has stopped already,
// so if the release fails too the lock ends on the server with its lease. A nil error still means released.
//
// After a release that failed on the transport, the client goes on releasing the hold in the background until the
// server answers or the lease has passed (a last hold), or releases it with the owner's last Unlock (another one).
// A last Unlock that finds the server holding the lock for the owner more times than this client's callers do —
// an acquire whose outcome was unknown (*OutcomeUnknownError) — releases those holds too when they are orphaned
// grants of this client, and returns a *StillHeldError when they may be another Client's (an owner pinned with
// WithOwner). An Unlock that follows such an acquire of its owner waits for the release of that acquire's possible
// grant first (at most RetryAttempts more attempts).
func (l *Lock) Unlock(held context.Context) error {
	return l.unlockSync(held, "Unlock")
}

// UnlockAsync is the asynchronous form of Unlock. The renewal is cancelled before it returns.
func (l *Lock) UnlockAsync(held context.Context) *future.Future[struct{}] {
	return l.unlock(held, "Unlock")
}

// unlockSync is a blocking Unlock of any kind of lock: unlock, with the release's replies read by this call's own
// Get (see syncUnlockOp), which waits for the server's answer whatever held's state.
func (lo *lockObject) unlockSync(held context.Context, op string) error {
	if err := inCallback(); err != nil {
		return err
	}
	u, err := lo.release(held, op, true)
	if err != nil {
		return err
	}
	_, err = u.p.Future().Get(background)
	u.waited()
	return lostUnlockError(held, lo.kind, lo.name, err)
}

// unlock releases one hold of the lock by held's owner for an async call (every kind of lock's UnlockAsync).
func (lo *lockObject) unlock(held context.Context, op string) *future.Future[struct{}] {
	u, err := lo.release(held, op, false)
	if err != nil {
		return future.Completed(struct{}{}, err)
	}
	if h, ok := held.Value(ownerKey{}).(*hold); ok && h.lostBy() != notLost {
		// Lost before this Unlock: a refusal reports the loss.
		return future.Then(u.p.Future(), func(_ struct{}, err error) (struct{}, error) {
			return struct{}{}, lostUnlockError(held, lo.kind, lo.name, err)
		})
	}
	return u.p.Future()
}

// release starts the release of one hold of the lock by held's owner; blocking: see Client.unlock. It fails
// without starting anything on bad input, a closed client, or a context without an owner.
func (lo *lockObject) release(held context.Context, op string, blocking bool) (*unlockOp, error) {
	c := lo.c
	if err := lo.check(op); err != nil {
		return nil, err
	}
	own, err := c.resolveOwner(held, op, false)
	if err != nil {
		return nil, err
	}
	if own.id == "" {
		return nil, ErrNotHeld
	}
	return c.unlock(lo.kind, lo.name, lo.sh, own.id, own.hold, blocking, false), nil
}

package rlock

import (
	"context"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// Lock is a handle on one reentrant lock, Redisson's RLock: a HASH named after the lock whose field is the owner
// and whose value is the hold count, with a lease (PEXPIRE). Obtain it from Client.Lock; it is cheap, holds no
// state of its own (the client keeps the held locks and the waiters) and is safe for concurrent use.
//
// Every operation has an Async form returning a future; the blocking form is the Async call followed by Get.
// Acquiring returns the held context: it carries the owner (acquire again with it to re-enter, unlock with it to
// release) and is cancelled, with a cause, when the lock stops being held (see the package documentation).
type Lock struct {
	c    *Client
	name string
	keys []string // {name, channel}: shared by every command of this handle (conn never modifies them)
	sh   *shard
}

// Name returns the lock's name (its Redis key).
func (l *Lock) Name() string { return l.name }

// Lock acquires the lock with the watchdog: the lease is the client's WatchdogTimeout, renewed every third of it
// while the lock is held, so the lock lasts until Unlock, or until the process dies plus at most the watchdog
// timeout. It blocks until the lock is held or ctx ends; waiting costs no polling (see the package documentation,
// "Waiting").
//
// It returns the held context (see Lock), or ctx's error when ctx ended first (a grant that raced with the end
// of ctx is released), ErrClosed, an *ArgumentError, or a transport or server error. If ctx already carries an
// owner that holds this lock, the call re-enters it (hold count + 1) and returns the context of that hold.
func (l *Lock) Lock(ctx context.Context) (context.Context, error) {
	return l.acquireSync(ctx, "Lock", -1, 0)
}

// LockAsync is the asynchronous form of Lock: it returns at once with a future completed with the held context.
// It starts no goroutine: the wait is driven by replies, unlock messages and the client's timer. When ctx ends
// first, the future fails with ctx's error (and a lock granted in flight is released); a lock granted before that
// belongs to the future's holder.
func (l *Lock) LockAsync(ctx context.Context) *future.Future[context.Context] {
	return l.acquireAsync(ctx, "LockAsync", -1, 0)
}

// LockLease acquires the lock for a fixed lease, without the watchdog: the lock ends on the server when the lease
// runs out, and the held context is cancelled with ErrLeaseExpired just before that. lease must be at least 1 ms.
// It blocks like Lock.
func (l *Lock) LockLease(ctx context.Context, lease time.Duration) (context.Context, error) {
	if lease == 0 {
		return nil, leaseError("LockLease", lease, "must be at least 1ms (use Lock for the watchdog)")
	}
	return l.acquireSync(ctx, "LockLease", -1, lease)
}

// LockLeaseAsync is the asynchronous form of LockLease.
func (l *Lock) LockLeaseAsync(ctx context.Context, lease time.Duration) *future.Future[context.Context] {
	if lease == 0 {
		return future.Completed[context.Context](nil, leaseError("LockLeaseAsync", lease, "must be at least 1ms (use LockAsync for the watchdog)"))
	}
	return l.acquireAsync(ctx, "LockLeaseAsync", -1, lease)
}

// TryLock acquires the lock if it can within wait: wait 0 makes one attempt. lease 0 takes the watchdog, a
// positive lease (at least 1 ms) a fixed lease as LockLease. It returns ErrNotAcquired when the wait ran out, and
// ctx's error when ctx ended first; otherwise as Lock.
func (l *Lock) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	if wait < 0 {
		return nil, waitError("TryLock", wait)
	}
	return l.acquireSync(ctx, "TryLock", wait, lease)
}

// TryLockAsync is the asynchronous form of TryLock.
func (l *Lock) TryLockAsync(ctx context.Context, wait, lease time.Duration) *future.Future[context.Context] {
	if wait < 0 {
		return future.Completed[context.Context](nil, waitError("TryLockAsync", wait))
	}
	return l.acquireAsync(ctx, "TryLockAsync", wait, lease)
}

func (l *Lock) acquireSync(ctx context.Context, op string, wait, lease time.Duration) (context.Context, error) {
	w, f := l.acquire(ctx, op, wait, lease, false)
	held, err := f.Get(ctx)
	if err != nil && w != nil {
		// Get returned early because ctx ended, or the call failed: abandon is a no-op in the latter case, and
		// in the former it makes sure a grant nobody will see is released.
		w.abandon(err, true)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return held, err
}

func (l *Lock) acquireAsync(ctx context.Context, op string, wait, lease time.Duration) *future.Future[context.Context] {
	_, f := l.acquire(ctx, op, wait, lease, true)
	return f
}

// acquire validates the call and starts it. wait < 0 means no bound; lease 0 means the watchdog; watch makes the
// call end when ctx ends (async calls; a sync call's Get watches ctx itself). It returns the waiter (nil when the
// call failed before starting) and its future.
func (l *Lock) acquire(ctx context.Context, op string, wait, lease time.Duration, watch bool) (*waiter, *future.Future[context.Context]) {
	c := l.c
	if l.name == "" {
		return nil, future.Completed[context.Context](nil, nameError(op))
	}
	if lease < 0 || (lease > 0 && lease < MinLease) {
		return nil, future.Completed[context.Context](nil, leaseError(op, lease, "must be at least 1ms, or 0 for the watchdog"))
	}
	if c.closed.Load() {
		return nil, future.Completed[context.Context](nil, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, future.Completed[context.Context](nil, err)
	}
	own, err := c.resolveOwner(ctx, op, true)
	if err != nil {
		return nil, future.Completed[context.Context](nil, err)
	}
	now := c.now()
	w := &waiter{c: c, lk: l, ctx: ctx, own: own, start: now}
	if lease == 0 {
		w.watchdog, w.lease, w.leaseArg = true, c.cfg.WatchdogTimeout, c.cfg.watchdogMillis
	} else {
		w.lease, w.leaseArg = lease, strconv.FormatInt(lease.Milliseconds(), 10)
	}
	switch {
	case wait == 0:
		w.noWait = true
	case wait > 0:
		w.deadline = now + wait
	}
	if watch && ctx.Done() != nil {
		// An async call watches ctx with context.AfterFunc: a registration, no goroutine, for standard contexts
		// (the callback gets a goroutine only when ctx actually ends). Set before the waiter is shared, so the
		// field is never written concurrently.
		w.stopCtx = context.AfterFunc(ctx, func() { w.abandon(ctx.Err(), false) })
	}
	c.start(w)
	return w, w.p.Future()
}

// start sends w's first attempt, or queues it behind this client's waiters for the same lock.
func (c *Client) start(w *waiter) {
	sh := w.lk.sh
	sh.mu.Lock()
	if w.state != wNew || w.abandoned != nil {
		sh.mu.Unlock()
		return
	}
	if h := sh.holds[holdKey{w.lk.name, w.own.id}]; h != nil {
		if h.state == holdReleasing && h.release != nil {
			// The same owner's last release is in flight: acquire after it settled, so the release's retry
			// condition (the expected count) cannot be confused by this grant.
			op := h.release
			sh.mu.Unlock()
			op.p.Future().OnComplete(func(struct{}, error) { c.start(w) })
			return
		}
		// Re-entry: never queued behind waiters, which would wait for this very owner.
	} else if q := sh.queues[w.lk.name]; q != nil && q.n > 0 && !w.noWait {
		// No barging: waiters that came first are served first.
		c.enqueueLocked(w)
		w.state = wIdle
		w.armLocked(0)
		sh.mu.Unlock()
		return
	}
	w.beginAttemptLocked()
	sh.mu.Unlock()
	w.sendAttempt()
}

// intReply decodes an integer reply for the query helpers.
func intReply(v resp.Value, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return v.AsInt64()
}

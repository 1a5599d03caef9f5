package rlock

import (
	"context"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// DefaultFairWaiterTimeout is how long a fair-lock waiter without a wait bound (Lock, LockLease) stays in the
// queue without showing life before others may skip it: Redisson's threadWaitTime default, 5 minutes. A living
// waiter refreshes it at least every third of it.
const DefaultFairWaiterTimeout = 5 * time.Minute

// fairRecheck is the longest a queued fair-lock waiter sleeps between attempts when nothing wakes it. Other
// clients may change the server's queue without telling it: Redisson's acquire shifts every waiter's deadline down
// by its thread wait time, and Redisson drops waiters whose deadline passed by its own client's clock, so a waiter
// of this package can find itself out of the queue, or made head, unannounced. Its next attempt re-queues it (or,
// as head, learns how long the lease runs), within a second.
const fairRecheck = 750 * time.Millisecond

// FairLock is Redisson's fair RLock: a reentrant lock (the plain lock's HASH, so it excludes plain Lock handles on
// the same name) that is granted in the order of the requests. Waiters queue on the server (LIST
// redisson_lock_queue:{name}, deadlines in ZSET redisson_lock_timeout:{name}); the lock is taken only by the head
// of the queue (or by anyone when nobody waits), and a release wakes the head alone, on its own channel
// (redisson_lock__channel:{name}:<owner>), not every waiter.
//
// A waiter's deadline is on the server's clock (redis TIME), so client clock skew cannot reorder or starve
// waiters (Redisson uses each client's clock). A TryLock's deadline is the end of its wait; a Lock's is a liveness
// window (WaiterTimeout, default 5 min) refreshed by its retries. A waiter whose deadline passed is removed when it
// reaches the head of the queue, so a waiter whose process died delays the others by no more than its wait (or
// the liveness window); a waiter that gives up removes itself at once. A TryLock without wait never queues.
//
// Liveness: whenever a script of this package changes the head of the queue (the head was granted the lock, gave
// up, or was dropped), the new head is woken on its channel; as head it then waits for the release message,
// bounded by the holder's remaining lease, so a free lock passes to the next living waiter within a timer tick of
// the release or of the lease's end. Every queued waiter also attempts at least once a second, which catches the
// changes other clients make without a message (next paragraph): one fair-acquire script per waiter per second.
//
// Redisson clients can share the lock; sharing the queue works too, with one difference: Redisson shifts every
// queued deadline down by its thread wait time when a waiter acquires, which can make the deadlines of this
// package's waiters pass early, and drops them unannounced; such a waiter re-queues (at the tail: it loses its
// place, never the mutual exclusion) at its next attempt, within a second. A Redisson grant to the head does not
// wake the next waiter either: a waiter of this package learns within a second that it is head.
//
// Obtain it with Client.FairLock; it is cheap, sends nothing until used, and is safe for concurrent use. Held
// contexts, ownership, the watchdog and Unlock behave as for Lock.
type FairLock struct {
	lockObject
	fkeys         []string // {name, queue, deadlines, channel prefix}
	waiterTimeout time.Duration
}

// FairLock returns a handle on the fair lock called name. It does no I/O; an empty name is reported by the
// handle's methods as an *ArgumentError.
func (c *Client) FairLock(name string) *FairLock {
	l := &FairLock{fkeys: fairKeys(name), waiterTimeout: DefaultFairWaiterTimeout}
	l.lockObject = c.newLockObject(name, kindFair, l)
	return l
}

// fairKeys are the keys of every fair-lock script: the lock, its queue, its waiters' deadlines and the prefix of
// its waiters' channels.
func fairKeys(name string) []string {
	return []string{name, prefixName(fairQueuePrefix, name), prefixName(fairTimeoutPrefix, name),
		prefixName(lockChannelPrefix, name)}
}

// WithWaiterTimeout returns a copy of the handle whose unbounded waiters use d as their liveness window (see
// FairLock). A d below 100 ms is raised to 100 ms. It does no I/O.
func (l *FairLock) WithWaiterTimeout(d time.Duration) *FairLock {
	cp := *l
	cp.waiterTimeout = max(d, 100*time.Millisecond)
	cp.rules = &cp
	return &cp
}

// Name returns the lock's name (its Redis key).
func (l *FairLock) Name() string { return l.name }

// The fair lock's rules: the server orders the waiters; each waits on its own channel, which says it is its turn.

func (l *FairLock) attempt(lc *lockCall) (*conn.Script, []string, []string) {
	return fairAcquireScript, l.fkeys, []string{lc.leaseArg(), lc.owner, l.deadlineArg(lc), scripts.UnlockMessage, l.c.pub()}
}

func (l *FairLock) decode(v resp.Value, err error) outcome {
	if err != nil {
		return outcome{err: err}
	}
	o := parseAcquire(v)
	if !o.granted && o.err == nil {
		// A queued waiter attempts at least every third of its liveness window, which keeps it queued, and at least
		// every fairRecheck, which finds changes other clients made to the queue without a message.
		o.bound = min(o.bound, l.waiterTimeout/3, fairRecheck)
	}
	return o
}

func (l *FairLock) channel(lc *lockCall) string { return l.fkeys[3] + ":" + lc.owner }

func (l *FairLock) wait(lc *lockCall) { lc.rule = wakeAll }

func (l *FairLock) ops() *acquireOps { return fairOps }

// left takes a waiter that gave up out of the server's queue (a try without waiting never joined it).
func (l *FairLock) left(lc *lockCall, then func()) {
	if lc.noWait || l.c.closed.Load() {
		runThen(then)
		return
	}
	owner := lc.owner
	l.c.call(background, conn.Cmd{Script: fairLeaveScript, Keys: l.fkeys, Args: []string{owner, scripts.UnlockMessage, l.c.pub()}}).
		OnComplete(func(_ resp.Value, err error) {
			runThen(then)
			if err != nil && !l.c.closed.Load() {
				l.c.log.Warn("rlock: removing a fair-lock waiter from the queue failed; it is dropped at its deadline",
					"lock", l.name, "owner", owner, "err", err)
			}
		})
}

// deadlineArg is a waiter's deadline, from now, for the acquire script: the rest of its wait, at most the
// liveness window; "0" for a try without waiting (never queued).
func (l *FairLock) deadlineArg(lc *lockCall) string {
	if lc.noWait {
		return "0"
	}
	d := l.waiterTimeout
	if lc.deadline != 0 {
		d = min(d, max(lc.deadline-l.c.now(), time.Millisecond))
	}
	return millis(d)
}

// Lock acquires the lock with the watchdog, in turn: it blocks until the lock is held or ctx ends (then ctx's
// error; the waiter leaves the queue and a grant that raced with it is released). With a held context of the same
// owner it re-enters without queueing. Safe for concurrent use.
func (l *FairLock) Lock(ctx context.Context) (context.Context, error) {
	return l.lock(ctx, formLock, -1, 0)
}

// LockAsync is the asynchronous form of Lock. It starts no goroutine.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (l *FairLock) LockAsync(ctx context.Context) *future.Future[context.Context] {
	return l.lockAsync(ctx, formLock, -1, 0)
}

// LockLease acquires the lock in turn for a fixed lease (at least 1 ms, no watchdog). It blocks like Lock.
func (l *FairLock) LockLease(ctx context.Context, lease time.Duration) (context.Context, error) {
	return l.lock(ctx, formLockLease, -1, lease)
}

// LockLeaseAsync is the asynchronous form of LockLease.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (l *FairLock) LockLeaseAsync(ctx context.Context, lease time.Duration) *future.Future[context.Context] {
	return l.lockAsync(ctx, formLockLease, -1, lease)
}

// TryLock acquires the lock in turn if it can within wait, with lease (0: the watchdog). With wait 0 it makes one
// attempt and never queues: it succeeds only when the lock is free and nobody waits. It returns ErrNotAcquired when
// the wait ran out (the waiter has left the queue), ctx's error when ctx ended first, an *OutcomeUnknownError as
// Lock.TryLock.
func (l *FairLock) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	return l.lock(ctx, formTryLock, wait, lease)
}

// TryLockAsync is the asynchronous form of TryLock.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (l *FairLock) TryLockAsync(ctx context.Context, wait, lease time.Duration) *future.Future[context.Context] {
	return l.lockAsync(ctx, formTryLock, wait, lease)
}

// Unlock releases one hold of the owner held carries; the last one deletes the lock and wakes the head waiter. It waits
// for the server's answer (bounded by the transport's response timeout and retries) and returns ErrNotHeld when the
// owner does not hold the lock. Its errors and its worst-case wait are Lock.Unlock's; bound the wait with
// UnlockAsync(held).Get(ctx). Safe for concurrent use.
func (l *FairLock) Unlock(held context.Context) error {
	return l.unlockSync(held, "FairLock.Unlock")
}

// UnlockAsync is the asynchronous form of Unlock; the renewal stops before it returns.
func (l *FairLock) UnlockAsync(held context.Context) *future.Future[struct{}] {
	return l.unlock(held, "FairLock.Unlock")
}

// ForceUnlock deletes the lock whoever holds it and wakes the head waiter; it reports whether there was a lock.
// This client's holds end with cause ErrLockLost. It blocks until the server answers or ctx ends.
func (l *FairLock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	return l.ForceUnlockAsync(ctx).Get(ctx)
}

// ForceUnlockAsync is the asynchronous form of ForceUnlock. Local holds are dropped before it returns.
func (l *FairLock) ForceUnlockAsync(ctx context.Context) *future.Future[bool] {
	return l.forceUnlock(ctx, "FairLock.ForceUnlock",
		conn.Cmd{Script: fairForceUnlockScript, Keys: l.fkeys, Args: []string{scripts.UnlockMessage, l.c.pub()}})
}

// IsLocked reports whether anyone holds the lock. It blocks until the server answers or ctx ends.
func (l *FairLock) IsLocked(ctx context.Context) (bool, error) {
	return blocking(ctx, func() *future.Future[bool] { return l.IsLockedAsync(ctx) })
}

// IsLockedAsync is the asynchronous form of IsLocked.
func (l *FairLock) IsLockedAsync(ctx context.Context) *future.Future[bool] {
	return l.isLocked(ctx, "FairLock.IsLocked")
}

// IsHeldBy reports whether the owner held carries holds the lock. It is bounded by the transport's response
// timeout, not by held's cancellation.
func (l *FairLock) IsHeldBy(held context.Context) (bool, error) {
	return blocking(background, func() *future.Future[bool] { return l.IsHeldByAsync(held) })
}

// IsHeldByAsync is the asynchronous form of IsHeldBy.
func (l *FairLock) IsHeldByAsync(held context.Context) *future.Future[bool] {
	return l.isHeldBy(held, "FairLock.IsHeldBy")
}

// HoldCount returns how many holds the owner held carries has on the lock (0 when none). Bounded like IsHeldBy.
func (l *FairLock) HoldCount(held context.Context) (int, error) {
	return blocking(background, func() *future.Future[int] { return l.HoldCountAsync(held) })
}

// HoldCountAsync is the asynchronous form of HoldCount.
func (l *FairLock) HoldCountAsync(held context.Context) *future.Future[int] {
	return l.holdCount(held, "FairLock.HoldCount")
}

// QueueLength returns how many waiters are queued on the server (any client). It blocks until the server answers
// or ctx ends.
func (l *FairLock) QueueLength(ctx context.Context) (int, error) {
	return blocking(ctx, func() *future.Future[int] { return l.QueueLengthAsync(ctx) })
}

// QueueLengthAsync is the asynchronous form of QueueLength.
func (l *FairLock) QueueLengthAsync(ctx context.Context) *future.Future[int] {
	if err := l.checkCtx("FairLock.QueueLength", ctx); err != nil {
		return future.Completed(0, err)
	}
	return future.Then(l.c.call(ctx, conn.Cmd{Args: []string{"LLEN", l.fkeys[1]}}), func(v resp.Value, err error) (int, error) {
		n, err := intReply(v, err)
		return int(n), err
	})
}

// RemainTimeToLive returns how long the lock's lease still runs, TTLNoKey when nobody holds it. It blocks until
// the server answers or ctx ends.
func (l *FairLock) RemainTimeToLive(ctx context.Context) (time.Duration, error) {
	return blocking(ctx, func() *future.Future[time.Duration] { return l.RemainTimeToLiveAsync(ctx) })
}

// RemainTimeToLiveAsync is the asynchronous form of RemainTimeToLive.
func (l *FairLock) RemainTimeToLiveAsync(ctx context.Context) *future.Future[time.Duration] {
	return l.remainTimeToLive(ctx, "FairLock.RemainTimeToLive")
}

var _ lockRules = (*FairLock)(nil)

package rlock

import (
	"context"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// FencedLock is Redisson's RFencedLock: a reentrant lock (the plain lock's HASH and unlock channel, so it excludes
// plain Lock handles and Redisson clients on the same name) whose every acquire, re-entry included, also returns a
// fencing token: a number taken from the STRING redisson_lock_token:{name}, incremented in the same script as the
// grant, so that a later grant always has a larger token than any earlier one.
//
// A lease can end while its holder is paused (a GC pause, a stopped VM): the holder then acts on a resource it no
// longer owns. Pass the token with every write to the resource and have the resource refuse a token smaller than
// the largest it has seen: the paused holder's writes are then refused (Martin Kleppmann's fencing). Unlike
// Redisson's lockAndGetToken(leaseTime), every acquire form applies the lease it is given.
//
// The counter survives a server restart only as far as the server's persistence does. When it is missing (never
// written, deleted, or lost with a server restarted without persistence), the acquire seeds it from the server's
// clock in microseconds (TIME) before incrementing it. Tokens after such a loss are larger than every token before
// it on one assumption: the server's clock moved forward between the last grant before the loss and the first
// after it (a clock set back across a restart, or a failover to a replica whose clock lags, can break it), and
// fewer than a million grants a second were made. Persistence (appendfsync always) keeps the counter itself.
//
// Obtain it with Client.FencedLock; it is cheap, sends nothing until used, and is safe for concurrent use. Held
// contexts, ownership, the watchdog and Unlock behave as for Lock.
type FencedLock struct {
	lockObject
}

// Fence is the result of an acquire of a FencedLock: the held context and this acquire's token.
type Fence struct {
	Held  context.Context
	Token int64
}

// FencedLock returns a handle on the fenced lock called name. It does no I/O; an empty name is reported by the
// handle's methods as an *ArgumentError.
func (c *Client) FencedLock(name string) *FencedLock {
	l := &FencedLock{}
	l.lockObject = c.newLockObject(name, kindPlain, l)
	return l
}

// Name returns the lock's name (its Redis key).
func (l *FencedLock) Name() string { return l.name }

// The fenced lock's rules: the plain lock's queue, channel and release, its own acquire script.

func (l *FencedLock) attempt(lc *lockCall) (*conn.Script, []string, []string) {
	c := l.c
	k := plainKeys(l.name)
	return fencedAcquireScript, append(k[:], prefixName(lockTokenPrefix, l.name)), []string{lc.leaseArg(),
		lc.owner, lc.attemptSpec(), c.pub()}
}

func (l *FencedLock) decode(v resp.Value, err error) outcome {
	if err != nil {
		return outcome{err: err}
	}
	return decodeFenced(v)
}

// channel: its waiters queue with the plain lock's on the same name (one channel, one queue)...
func (l *FencedLock) channel(*lockCall) string { return channelName(l.name) }

// ... but take no hand-off: a grant must come with a token, from their own script.
func (l *FencedLock) wait(lc *lockCall) { lc.rule, lc.serverQueue = wakeOne, true }

func (l *FencedLock) left(_ *lockCall, then func()) { runThen(then) }

func (l *FencedLock) ops() *acquireOps { return fencedOps }

// decodeFenced decodes the fenced acquire's reply: an array of two integers {hold count, token}, both at least 1,
// is a grant; an integer is a refusal (the lock's PTTL). Anything else is an error, never a grant: a token that
// is not the one the server counted would defeat the fencing.
func decodeFenced(v resp.Value) outcome {
	switch {
	case v.Type == resp.Array && len(v.Elems) == 2:
		n, t := v.Elems[0], v.Elems[1]
		if n.Type == resp.Integer && t.Type == resp.Integer && n.Int >= 1 && t.Int >= 1 {
			return outcome{granted: true, count: n.Int, token: t.Int}
		}
	case v.Type == resp.Integer:
		return outcome{bound: ttlBound(v.Int)}
	}
	return outcome{err: &resp.TypeError{Want: "{hold count, token} or PTTL", Got: v.Type}}
}

// sync is lockObject.lock returning the grant's token too: a blocking acquire of form.
func (l *FencedLock) sync(ctx context.Context, form acquireForm, wait, lease time.Duration) (context.Context, int64, error) {
	op, err := l.opOf(form, false, wait, lease)
	if err == nil {
		err = inCallback()
	}
	if err != nil {
		return nil, 0, err
	}
	lc, f := l.acquire(ctx, op, wait, lease, false)
	if lc == nil {
		_, err := f.Get(ctx)
		return nil, 0, err
	}
	held, err := waitSync(ctx, &lc.waiter, f)
	if err != nil {
		return nil, 0, err
	}
	return held, lc.token, nil
}

// async is lockObject.lockAsync completing with the grant's token too: an async acquire of form.
func (l *FencedLock) async(ctx context.Context, form acquireForm, wait, lease time.Duration) *future.Future[Fence] {
	op, err := l.opOf(form, true, wait, lease)
	if err != nil {
		return future.Completed(Fence{}, err)
	}
	lc, f := l.acquire(ctx, op, wait, lease, true)
	return future.Then(f, func(held context.Context, err error) (Fence, error) {
		if err != nil {
			return Fence{}, err
		}
		return Fence{Held: held, Token: lc.token}, nil // lc.token was written before the future completed
	})
}

// Lock acquires the lock with the watchdog and returns the held context and this acquire's token. It blocks until
// the lock is held or ctx ends (then ctx's error; a grant that raced with it is released). Safe for concurrent use.
func (l *FencedLock) Lock(ctx context.Context) (context.Context, int64, error) {
	return l.sync(ctx, formLock, -1, 0)
}

// LockAsync is the asynchronous form of Lock. It starts no goroutine.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (l *FencedLock) LockAsync(ctx context.Context) *future.Future[Fence] {
	return l.async(ctx, formLock, -1, 0)
}

// LockLease acquires the lock for a fixed lease (at least 1 ms, no watchdog) and returns the held context and
// token. It blocks like Lock.
func (l *FencedLock) LockLease(ctx context.Context, lease time.Duration) (context.Context, int64, error) {
	return l.sync(ctx, formLockLease, -1, lease)
}

// LockLeaseAsync is the asynchronous form of LockLease.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (l *FencedLock) LockLeaseAsync(ctx context.Context, lease time.Duration) *future.Future[Fence] {
	return l.async(ctx, formLockLease, -1, lease)
}

// TryLock acquires the lock if it can within wait (0: one attempt) with lease (0: the watchdog) and returns the
// held context and token; ErrNotAcquired when the wait ran out, ctx's error when ctx ended first, an
// *OutcomeUnknownError as Lock.TryLock.
func (l *FencedLock) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, int64, error) {
	return l.sync(ctx, formTryLock, wait, lease)
}

// TryLockAsync is the asynchronous form of TryLock.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (l *FencedLock) TryLockAsync(ctx context.Context, wait, lease time.Duration) *future.Future[Fence] {
	return l.async(ctx, formTryLock, wait, lease)
}

// Unlock releases one hold of the owner held carries; the last one deletes the lock and publishes the unlock message
// (or hands the lock to a waiting plain Lock of this client). It waits for the server's answer (bounded by the
// transport's response timeout and retries) and returns ErrNotHeld when the owner does not hold the lock. Its errors
// and its worst-case wait are Lock.Unlock's; bound the wait with UnlockAsync(held).Get(ctx). Safe for concurrent use.
func (l *FencedLock) Unlock(held context.Context) error {
	return l.unlockSync(held, "FencedLock.Unlock")
}

// UnlockAsync is the asynchronous form of Unlock; the renewal stops before it returns.
func (l *FencedLock) UnlockAsync(held context.Context) *future.Future[struct{}] {
	return l.unlock(held, "FencedLock.Unlock")
}

// Token returns the current token: the one of the latest grant, 0 when the lock was never taken. It blocks until
// the server answers or ctx ends.
func (l *FencedLock) Token(ctx context.Context) (int64, error) {
	return blocking(ctx, func() *future.Future[int64] { return l.TokenAsync(ctx) })
}

// TokenAsync is the asynchronous form of Token.
func (l *FencedLock) TokenAsync(ctx context.Context) *future.Future[int64] {
	if err := l.checkCtx("FencedLock.Token", ctx); err != nil {
		return future.Completed(int64(0), err)
	}
	return future.Then(l.c.call(ctx, conn.Cmd{Args: []string{"GET", prefixName(lockTokenPrefix, l.name)}}), intReply)
}

// ForceUnlock deletes the lock whoever holds it and publishes the unlock message; it reports whether there was a
// lock. This client's holds of it end with cause ErrLockLost. It blocks until the server answers or ctx ends.
func (l *FencedLock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	return l.ForceUnlockAsync(ctx).Get(ctx)
}

// ForceUnlockAsync is the asynchronous form of ForceUnlock. Local holds are dropped before it returns.
func (l *FencedLock) ForceUnlockAsync(ctx context.Context) *future.Future[bool] {
	return l.forceUnlock(ctx, "FencedLock.ForceUnlock",
		conn.Cmd{Script: deletePublishScript, Keys: []string{l.name, channelName(l.name)},
			Args: []string{scripts.UnlockMessage, l.c.pub()}})
}

// IsLocked reports whether anyone holds the lock. It blocks until the server answers or ctx ends.
func (l *FencedLock) IsLocked(ctx context.Context) (bool, error) {
	return blocking(ctx, func() *future.Future[bool] { return l.IsLockedAsync(ctx) })
}

// IsLockedAsync is the asynchronous form of IsLocked.
func (l *FencedLock) IsLockedAsync(ctx context.Context) *future.Future[bool] {
	return l.isLocked(ctx, "FencedLock.IsLocked")
}

// HoldCount returns how many holds the owner held carries has on the lock (0 when none). It is bounded by the
// transport's response timeout, not by held's cancellation.
func (l *FencedLock) HoldCount(held context.Context) (int, error) {
	return blocking(background, func() *future.Future[int] { return l.HoldCountAsync(held) })
}

// HoldCountAsync is the asynchronous form of HoldCount.
func (l *FencedLock) HoldCountAsync(held context.Context) *future.Future[int] {
	return l.holdCount(held, "FencedLock.HoldCount")
}

// IsHeldBy reports whether the owner held carries holds the lock. It is bounded by the transport's response
// timeout, not by held's cancellation.
func (l *FencedLock) IsHeldBy(held context.Context) (bool, error) {
	return blocking(background, func() *future.Future[bool] { return l.IsHeldByAsync(held) })
}

// IsHeldByAsync is the asynchronous form of IsHeldBy.
func (l *FencedLock) IsHeldByAsync(held context.Context) *future.Future[bool] {
	return l.isHeldBy(held, "FencedLock.IsHeldBy")
}

// RemainTimeToLive returns how long the lock's lease still runs, TTLNoKey when nobody holds it. It blocks until
// the server answers or ctx ends.
func (l *FencedLock) RemainTimeToLive(ctx context.Context) (time.Duration, error) {
	return blocking(ctx, func() *future.Future[time.Duration] { return l.RemainTimeToLiveAsync(ctx) })
}

// RemainTimeToLiveAsync is the asynchronous form of RemainTimeToLive.
func (l *FencedLock) RemainTimeToLiveAsync(ctx context.Context) *future.Future[time.Duration] {
	return l.remainTimeToLive(ctx, "FencedLock.RemainTimeToLive")
}

var _ lockRules = (*FencedLock)(nil)

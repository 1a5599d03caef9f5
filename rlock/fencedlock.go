package rlock

import (
	"context"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
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
// Obtain it with Client.FencedLock; it is cheap, sends nothing until used, and is safe for concurrent use. Held
// contexts, ownership, the watchdog and Unlock behave as for Lock.
type FencedLock struct {
	f       *family
	name    string
	keys    []string // {name, token key}
	relKeys []string // {name, unlock channel}
}

// Fence is the result of an acquire of a FencedLock: the held context and this acquire's token.
type Fence struct {
	Held  context.Context
	Token int64
}

// FencedLock returns a handle on the fenced lock called name. It does no I/O; an empty name is reported by the
// handle's methods as an *ArgumentError.
func (c *Client) FencedLock(name string) *FencedLock {
	ch := channelName(name)
	return &FencedLock{f: c.fam(), name: name, keys: []string{name, prefixName("redisson_lock_token", name)},
		relKeys: []string{name, ch}}
}

// Name returns the lock's name (its Redis key).
func (l *FencedLock) Name() string { return l.name }

func (l *FencedLock) spec(op string, wait, lease time.Duration) famLockSpec {
	return famLockSpec{op: op, name: l.name, kind: famKindLock, channel: l.relKeys[1], policy: wakeHead,
		wait: wait, lease: lease, release: l.releaseCmd,
		attempt: func(owner, lease string, _ *famWait) conn.Cmd {
			return conn.Cmd{Script: fencedAcquireScript, Keys: l.keys, Args: []string{lease, owner}}
		},
		decode: decodeFenced,
	}
}

func (l *FencedLock) releaseCmd(owner string, expect int64, lease string) conn.Cmd {
	return conn.Cmd{Script: famReleaseScript, Keys: l.relKeys, Args: []string{owner, famCount(expect), lease, unlockMessage}}
}

func decodeFenced(v resp.Value) (bool, int64, int64, time.Duration, error) {
	switch {
	case v.Type == resp.Array && len(v.Elems) == 2:
		return true, v.Elems[0].Int, v.Elems[1].Int, 0, nil
	case v.Type == resp.Integer:
		return false, 0, 0, famPTTLRetry(v.Int), nil
	}
	return false, 0, 0, 0, &resp.TypeError{Want: "{count, token} or PTTL", Got: v.Type}
}

func (l *FencedLock) sync(ctx context.Context, op string, wait, lease time.Duration) (context.Context, int64, error) {
	w, fut := l.f.acquireLock(ctx, l.spec(op, wait, lease), false)
	r, err := famLockSync(ctx, w, fut)
	return r.held, r.token, err
}

func (l *FencedLock) async(ctx context.Context, op string, wait, lease time.Duration) *future.Future[Fence] {
	_, fut := l.f.acquireLock(ctx, l.spec(op, wait, lease), true)
	return future.Then(fut, func(r famLocked, err error) (Fence, error) { return Fence{Held: r.held, Token: r.token}, err })
}

// Lock acquires the lock with the watchdog and returns the held context and this acquire's token. It blocks until
// the lock is held or ctx ends (then ctx's error; a grant that raced with it is released). Safe for concurrent use.
func (l *FencedLock) Lock(ctx context.Context) (context.Context, int64, error) {
	return l.sync(ctx, "FencedLock.Lock", -1, 0)
}

// LockAsync is the asynchronous form of Lock. It starts no goroutine.
func (l *FencedLock) LockAsync(ctx context.Context) *future.Future[Fence] {
	return l.async(ctx, "FencedLock.LockAsync", -1, 0)
}

// LockLease acquires the lock for a fixed lease (at least 1 ms, no watchdog) and returns the held context and
// token. It blocks like Lock.
func (l *FencedLock) LockLease(ctx context.Context, lease time.Duration) (context.Context, int64, error) {
	if lease == 0 {
		return nil, 0, &ArgumentError{Op: "FencedLock.LockLease", Arg: "lease", Value: "0s", Reason: "must be at least 1ms (use Lock for the watchdog)"}
	}
	return l.sync(ctx, "FencedLock.LockLease", -1, lease)
}

// LockLeaseAsync is the asynchronous form of LockLease.
func (l *FencedLock) LockLeaseAsync(ctx context.Context, lease time.Duration) *future.Future[Fence] {
	if lease == 0 {
		return future.Completed(Fence{}, &ArgumentError{Op: "FencedLock.LockLeaseAsync", Arg: "lease", Value: "0s", Reason: "must be at least 1ms (use LockAsync for the watchdog)"})
	}
	return l.async(ctx, "FencedLock.LockLeaseAsync", -1, lease)
}

// TryLock acquires the lock if it can within wait (0: one attempt) with lease (0: the watchdog) and returns the
// held context and token; ErrNotAcquired when the wait ran out, ctx's error when ctx ended first.
func (l *FencedLock) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, int64, error) {
	if err := famWaitArg("FencedLock.TryLock", wait); err != nil {
		return nil, 0, err
	}
	return l.sync(ctx, "FencedLock.TryLock", wait, lease)
}

// TryLockAsync is the asynchronous form of TryLock.
func (l *FencedLock) TryLockAsync(ctx context.Context, wait, lease time.Duration) *future.Future[Fence] {
	if err := famWaitArg("FencedLock.TryLockAsync", wait); err != nil {
		return future.Completed(Fence{}, err)
	}
	return l.async(ctx, "FencedLock.TryLockAsync", wait, lease)
}

// Unlock releases one hold of the owner held carries; the last one deletes the lock and publishes the unlock
// message. It waits for the server's answer (bounded by the transport's response timeout and retries) and returns
// ErrNotHeld when the owner does not hold the lock. Safe for concurrent use.
func (l *FencedLock) Unlock(held context.Context) error {
	_, err := l.UnlockAsync(held).Get(background)
	return err
}

// UnlockAsync is the asynchronous form of Unlock; the renewal stops before it returns.
func (l *FencedLock) UnlockAsync(held context.Context) *future.Future[struct{}] {
	return l.f.unlockFor(held, "FencedLock.Unlock", l.name, famKindLock, l.releaseCmd)
}

// Token returns the current token: the one of the latest grant, 0 when the lock was never taken. It blocks until
// the server answers or ctx ends.
func (l *FencedLock) Token(ctx context.Context) (int64, error) { return l.TokenAsync(ctx).Get(ctx) }

// TokenAsync is the asynchronous form of Token.
func (l *FencedLock) TokenAsync(ctx context.Context) *future.Future[int64] {
	if err := famCheck(l.f.c, "FencedLock.Token", l.name); err != nil {
		return future.Completed(int64(0), err)
	}
	return future.Then(l.f.call(ctx, nil, nil, "GET", l.keys[1]), famInt)
}

// ForceUnlock deletes the lock whoever holds it and publishes the unlock message; it reports whether there was a
// lock. This client's holds of it end with cause ErrLockLost. It blocks until the server answers or ctx ends.
func (l *FencedLock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := famCheck(l.f.c, "FencedLock.ForceUnlock", l.name); err != nil {
		return false, err
	}
	l.f.dropAll(l.name, famKindLock)
	n, err := famInt(l.f.call(ctx, famForceUnlockScript, l.relKeys, unlockMessage).Get(ctx))
	return n == 1, err
}

// IsLocked reports whether anyone holds the lock. It blocks until the server answers or ctx ends.
func (l *FencedLock) IsLocked(ctx context.Context) (bool, error) {
	if err := famCheck(l.f.c, "FencedLock.IsLocked", l.name); err != nil {
		return false, err
	}
	return l.f.queryBool(ctx, "EXISTS", l.name).Get(ctx)
}

// HoldCount returns how many holds the owner held carries has on the lock (0 when none). It is bounded by the
// transport's response timeout, not by held's cancellation.
func (l *FencedLock) HoldCount(held context.Context) (int, error) {
	return l.f.queryHeld(held, "FencedLock.HoldCount", l.name, nil, true).Get(background)
}

// IsHeldBy reports whether the owner held carries holds the lock. It is bounded by the transport's response
// timeout, not by held's cancellation.
func (l *FencedLock) IsHeldBy(held context.Context) (bool, error) {
	n, err := l.f.queryHeld(held, "FencedLock.IsHeldBy", l.name, nil, false).Get(background)
	return n == 1, err
}

// RemainTimeToLive returns how long the lock's lease still runs, TTLNoKey when nobody holds it. It blocks until
// the server answers or ctx ends.
func (l *FencedLock) RemainTimeToLive(ctx context.Context) (time.Duration, error) {
	return l.f.ttl(ctx, "FencedLock.RemainTimeToLive", l.name).Get(ctx)
}

package rlock

import (
	"context"
	"errors"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// ReadWriteLock is Redisson's RReadWriteLock: any number of readers, or one writer, on one HASH (see the
// read-write scripts for the layout, which is Redisson's byte for byte). Both modes re-enter; the writer may also
// take read holds (downgrade) and keeps writing until it releases the write lock. Every read hold has its own
// lease (its own key), the lock lasts as long as its longest hold, and the watchdog renews readers as well as the
// writer. A write unlock wakes every waiter (any number of readers may enter), a read unlock one.
//
// Readers are not held back by a waiting writer (no writer preference, as Redisson): under a constant stream of
// readers a writer can wait long.
//
// Obtain it with Client.ReadWriteLock; it is cheap, sends nothing until used, and is safe for concurrent use.
type ReadWriteLock struct {
	f    *family
	name string
	ch   string // redisson_rwlock:{name}
	tag  string // {name}: the prefix of every owner's hold keys
}

// ReadLock is the read half of a ReadWriteLock.
type ReadLock struct{ rw *ReadWriteLock }

// WriteLock is the write half of a ReadWriteLock.
type WriteLock struct{ rw *ReadWriteLock }

// ReadWriteLock returns a handle on the read-write lock called name. It does no I/O; an empty name is reported by
// the handle's methods as an *ArgumentError.
func (c *Client) ReadWriteLock(name string) *ReadWriteLock {
	return &ReadWriteLock{f: c.fam(), name: name, ch: prefixName(rwChannelPrefix, name), tag: hashTag(name)}
}

// Name returns the lock's name (its Redis key).
func (rw *ReadWriteLock) Name() string { return rw.name }

// ReadLock returns the read half. It does no I/O.
func (rw *ReadWriteLock) ReadLock() *ReadLock { return &ReadLock{rw} }

// WriteLock returns the write half. It does no I/O.
func (rw *ReadWriteLock) WriteLock() *WriteLock { return &WriteLock{rw} }

// prefix is an owner's hold-key prefix: {name}:<owner>:rwlock_timeout.
func (rw *ReadWriteLock) prefix(owner string) string {
	return rwHoldPrefix(rw.name, owner)
}

func rwWriteField(owner string) string { return owner + ":write" }

// ForceUnlock deletes the lock in either mode, whoever holds it, and wakes every waiter; it reports whether there
// was a lock. This client's read and write holds end with cause ErrLockLost. It blocks until the server answers or
// ctx ends.
func (rw *ReadWriteLock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := famCheck(rw.f.c, "ReadWriteLock.ForceUnlock", rw.name); err != nil {
		return false, err
	}
	rw.f.dropAll(rw.name, famKindRead, famKindWrite)
	n, err := famInt(rw.f.call(ctx, rwForceUnlockScript, []string{rw.name, rw.ch}, "1").Get(ctx))
	return n == 1, err
}

// Mode returns "read", "write", or "" when the lock is free. It blocks until the server answers or ctx ends.
func (rw *ReadWriteLock) Mode(ctx context.Context) (string, error) {
	if err := famCheck(rw.f.c, "ReadWriteLock.Mode", rw.name); err != nil {
		return "", err
	}
	v, err := rw.f.call(ctx, nil, nil, "HGET", rw.name, "mode").Get(ctx)
	if err != nil {
		return "", err
	}
	s, err := v.AsString()
	if errors.Is(err, resp.ErrNil) {
		return "", nil
	}
	return s, err
}

// RemainTimeToLive returns how long the lock still lasts (its longest hold), TTLNoKey when it is free. It blocks
// until the server answers or ctx ends.
func (rw *ReadWriteLock) RemainTimeToLive(ctx context.Context) (time.Duration, error) {
	return rw.f.ttl(ctx, "ReadWriteLock.RemainTimeToLive", rw.name).Get(ctx)
}

// Read half.

func (r *ReadLock) releaseCmd(owner string, expect int64, _ string) conn.Cmd {
	rw := r.rw
	return conn.Cmd{Script: rwReadReleaseScript, Keys: []string{rw.name, rw.ch, rw.prefix(owner), rw.tag},
		Args: []string{owner, famCount(expect), unlockMessage}}
}

func (r *ReadLock) spec(op string, wait, lease time.Duration) famLockSpec {
	rw := r.rw
	return famLockSpec{op: op, name: rw.name, kind: famKindRead, channel: rw.ch, policy: wakeRW, wait: wait,
		lease: lease, prefix: rw.prefix, release: r.releaseCmd,
		attempt: func(owner, lease string, _ *famWait) conn.Cmd {
			return conn.Cmd{Script: rwReadAcquireScript, Keys: []string{rw.name, rw.prefix(owner)},
				Args: []string{lease, owner, rwWriteField(owner)}}
		},
		decode: famDecodeCount,
	}
}

func (r *ReadLock) sync(ctx context.Context, op string, wait, lease time.Duration) (context.Context, error) {
	w, fut := r.rw.f.acquireLock(ctx, r.spec(op, wait, lease), false)
	l, err := famLockSync(ctx, w, fut)
	return l.held, err
}

func (r *ReadLock) async(ctx context.Context, op string, wait, lease time.Duration) *future.Future[context.Context] {
	_, fut := r.rw.f.acquireLock(ctx, r.spec(op, wait, lease), true)
	return famHeldFuture(fut)
}

// Name returns the lock's name.
func (r *ReadLock) Name() string { return r.rw.name }

// Lock takes a read hold with the watchdog: it blocks until no writer (other than the owner) holds the lock, or
// ctx ends. Every call adds a hold (its own key); the held context is the owner's for all its read holds of this
// lock and is cancelled when the last one goes. An owner's read holds share one renewal: while any of them uses the
// watchdog, the watchdog renews all of them (as Redisson's does). Safe for concurrent use.
func (r *ReadLock) Lock(ctx context.Context) (context.Context, error) {
	return r.sync(ctx, "ReadLock.Lock", -1, 0)
}

// LockAsync is the asynchronous form of Lock. It starts no goroutine.
func (r *ReadLock) LockAsync(ctx context.Context) *future.Future[context.Context] {
	return r.async(ctx, "ReadLock.LockAsync", -1, 0)
}

// LockLease takes a read hold for a fixed lease (at least 1 ms); the hold's key expires with it, independently of
// the owner's other holds. It blocks like Lock.
func (r *ReadLock) LockLease(ctx context.Context, lease time.Duration) (context.Context, error) {
	if lease == 0 {
		return nil, &ArgumentError{Op: "ReadLock.LockLease", Arg: "lease", Value: "0s", Reason: "must be at least 1ms (use Lock for the watchdog)"}
	}
	return r.sync(ctx, "ReadLock.LockLease", -1, lease)
}

// LockLeaseAsync is the asynchronous form of LockLease.
func (r *ReadLock) LockLeaseAsync(ctx context.Context, lease time.Duration) *future.Future[context.Context] {
	if lease == 0 {
		return future.Completed[context.Context](nil, &ArgumentError{Op: "ReadLock.LockLeaseAsync", Arg: "lease", Value: "0s", Reason: "must be at least 1ms (use LockAsync for the watchdog)"})
	}
	return r.async(ctx, "ReadLock.LockLeaseAsync", -1, lease)
}

// TryLock takes a read hold if it can within wait (0: one attempt) with lease (0: the watchdog). It returns
// ErrNotAcquired when the wait ran out, ctx's error when ctx ended first.
func (r *ReadLock) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	if err := famWaitArg("ReadLock.TryLock", wait); err != nil {
		return nil, err
	}
	return r.sync(ctx, "ReadLock.TryLock", wait, lease)
}

// TryLockAsync is the asynchronous form of TryLock.
func (r *ReadLock) TryLockAsync(ctx context.Context, wait, lease time.Duration) *future.Future[context.Context] {
	if err := famWaitArg("ReadLock.TryLockAsync", wait); err != nil {
		return future.Completed[context.Context](nil, err)
	}
	return r.async(ctx, "ReadLock.TryLockAsync", wait, lease)
}

// Unlock releases the owner's newest read hold. The lock then lasts as long as its longest remaining hold; when
// none remains it is deleted and one waiter woken. It waits for the server's answer and returns ErrNotHeld when the
// owner holds no read hold. Safe for concurrent use.
func (r *ReadLock) Unlock(held context.Context) error {
	_, err := r.UnlockAsync(held).Get(background)
	return err
}

// UnlockAsync is the asynchronous form of Unlock.
func (r *ReadLock) UnlockAsync(held context.Context) *future.Future[struct{}] {
	return r.rw.f.unlockFor(held, "ReadLock.Unlock", r.rw.name, famKindRead, r.releaseCmd)
}

// HoldCount returns how many read holds the owner held carries has (0 when none). It is bounded by the
// transport's response timeout, not by held's cancellation.
func (r *ReadLock) HoldCount(held context.Context) (int, error) {
	return r.rw.f.queryHeld(held, "ReadLock.HoldCount", r.rw.name, nil, true).Get(background)
}

// Write half.

func (wl *WriteLock) releaseCmd(owner string, expect int64, lease string) conn.Cmd {
	rw := wl.rw
	return conn.Cmd{Script: rwWriteReleaseScript, Keys: []string{rw.name, rw.ch},
		Args: []string{rwWriteField(owner), famCount(expect), lease, "1"}}
}

func (wl *WriteLock) spec(op string, wait, lease time.Duration) famLockSpec {
	rw := wl.rw
	return famLockSpec{op: op, name: rw.name, kind: famKindWrite, channel: rw.ch, policy: wakeRW, wait: wait,
		lease: lease, field: rwWriteField, release: wl.releaseCmd,
		attempt: func(owner, lease string, _ *famWait) conn.Cmd {
			return conn.Cmd{Script: rwWriteAcquireScript, Keys: []string{rw.name}, Args: []string{lease, rwWriteField(owner), owner}}
		},
		decode: famDecodeCount,
	}
}

func (wl *WriteLock) sync(ctx context.Context, op string, wait, lease time.Duration) (context.Context, error) {
	w, fut := wl.rw.f.acquireLock(ctx, wl.spec(op, wait, lease), false)
	l, err := famLockSync(ctx, w, fut)
	return l.held, mapUpgrade(err)
}

func (wl *WriteLock) async(ctx context.Context, op string, wait, lease time.Duration) *future.Future[context.Context] {
	_, fut := wl.rw.f.acquireLock(ctx, wl.spec(op, wait, lease), true)
	return future.Then(famHeldFuture(fut), func(h context.Context, err error) (context.Context, error) { return h, mapUpgrade(err) })
}

// mapUpgrade turns the script's RWUPGRADE error reply (a *resp.ServerError from the transport) into
// ErrLockUpgrade.
func mapUpgrade(err error) error {
	if famIsServerError(err, "RWUPGRADE") {
		return ErrLockUpgrade
	}
	return err
}

// Name returns the lock's name.
func (wl *WriteLock) Name() string { return wl.rw.name }

// Lock takes the write lock with the watchdog: it blocks until no reader and no other writer holds the lock, or ctx
// ends. It returns ErrLockUpgrade at once when the owner holds a read hold and no write hold. Safe for concurrent
// use.
func (wl *WriteLock) Lock(ctx context.Context) (context.Context, error) {
	return wl.sync(ctx, "WriteLock.Lock", -1, 0)
}

// LockAsync is the asynchronous form of Lock. It starts no goroutine.
func (wl *WriteLock) LockAsync(ctx context.Context) *future.Future[context.Context] {
	return wl.async(ctx, "WriteLock.LockAsync", -1, 0)
}

// LockLease takes the write lock for a fixed lease (at least 1 ms). It blocks like Lock.
func (wl *WriteLock) LockLease(ctx context.Context, lease time.Duration) (context.Context, error) {
	if lease == 0 {
		return nil, &ArgumentError{Op: "WriteLock.LockLease", Arg: "lease", Value: "0s", Reason: "must be at least 1ms (use Lock for the watchdog)"}
	}
	return wl.sync(ctx, "WriteLock.LockLease", -1, lease)
}

// LockLeaseAsync is the asynchronous form of LockLease.
func (wl *WriteLock) LockLeaseAsync(ctx context.Context, lease time.Duration) *future.Future[context.Context] {
	if lease == 0 {
		return future.Completed[context.Context](nil, &ArgumentError{Op: "WriteLock.LockLeaseAsync", Arg: "lease", Value: "0s", Reason: "must be at least 1ms (use LockAsync for the watchdog)"})
	}
	return wl.async(ctx, "WriteLock.LockLeaseAsync", -1, lease)
}

// TryLock takes the write lock if it can within wait (0: one attempt) with lease (0: the watchdog). It returns
// ErrNotAcquired when the wait ran out, ctx's error when ctx ended first, ErrLockUpgrade as Lock.
func (wl *WriteLock) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	if err := famWaitArg("WriteLock.TryLock", wait); err != nil {
		return nil, err
	}
	return wl.sync(ctx, "WriteLock.TryLock", wait, lease)
}

// TryLockAsync is the asynchronous form of TryLock.
func (wl *WriteLock) TryLockAsync(ctx context.Context, wait, lease time.Duration) *future.Future[context.Context] {
	if err := famWaitArg("WriteLock.TryLockAsync", wait); err != nil {
		return future.Completed[context.Context](nil, err)
	}
	return wl.async(ctx, "WriteLock.TryLockAsync", wait, lease)
}

// Unlock releases one write hold; the last one deletes the lock (or, when the owner still has read holds, turns
// it to read mode) and wakes every waiter. It waits for the server's answer and returns ErrNotHeld when the owner
// does not hold the write lock. Safe for concurrent use.
func (wl *WriteLock) Unlock(held context.Context) error {
	_, err := wl.UnlockAsync(held).Get(background)
	return err
}

// UnlockAsync is the asynchronous form of Unlock.
func (wl *WriteLock) UnlockAsync(held context.Context) *future.Future[struct{}] {
	return wl.rw.f.unlockFor(held, "WriteLock.Unlock", wl.rw.name, famKindWrite, wl.releaseCmd)
}

// IsLocked reports whether a writer holds the lock. It blocks until the server answers or ctx ends.
func (wl *WriteLock) IsLocked(ctx context.Context) (bool, error) {
	m, err := wl.rw.Mode(ctx)
	return m == "write", err
}

// HoldCount returns how many write holds the owner held carries has (0 when none). It is bounded by the
// transport's response timeout, not by held's cancellation.
func (wl *WriteLock) HoldCount(held context.Context) (int, error) {
	return wl.rw.f.queryHeld(held, "WriteLock.HoldCount", wl.rw.name, rwWriteField, true).Get(background)
}

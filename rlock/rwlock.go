package rlock

import (
	"context"
	"errors"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
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
	read  ReadLock
	write WriteLock
	ch    string // redisson_rwlock:{name}
}

// ReadLock is the read half of a ReadWriteLock.
type ReadLock struct {
	lockObject
	rw *ReadWriteLock
}

// WriteLock is the write half of a ReadWriteLock.
type WriteLock struct {
	lockObject
	rw *ReadWriteLock
}

// ReadWriteLock returns a handle on the read-write lock called name. It does no I/O; an empty name is reported by
// the handle's methods as an *ArgumentError.
func (c *Client) ReadWriteLock(name string) *ReadWriteLock {
	rw := &ReadWriteLock{ch: prefixName(rwChannelPrefix, name)}
	rw.read = ReadLock{lockObject: c.newLockObject(name, kindRead, &rw.read), rw: rw}
	rw.write = WriteLock{lockObject: c.newLockObject(name, kindWrite, &rw.write), rw: rw}
	return rw
}

// Name returns the lock's name (its Redis key).
func (rw *ReadWriteLock) Name() string { return rw.write.name }

// ReadLock returns the read half. It does no I/O.
func (rw *ReadWriteLock) ReadLock() *ReadLock { return &rw.read }

// WriteLock returns the write half. It does no I/O.
func (rw *ReadWriteLock) WriteLock() *WriteLock { return &rw.write }

// ForceUnlock deletes the lock in either mode, whoever holds it, and wakes every waiter; it reports whether there
// was a lock. This client's read and write holds end with cause ErrLockLost. It blocks until the server answers or
// ctx ends.
func (rw *ReadWriteLock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	return rw.ForceUnlockAsync(ctx).Get(ctx)
}

// ForceUnlockAsync is the asynchronous form of ForceUnlock. Local holds are dropped before it returns.
func (rw *ReadWriteLock) ForceUnlockAsync(ctx context.Context) *future.Future[bool] {
	w := &rw.write
	return w.forceUnlock(ctx, "ReadWriteLock.ForceUnlock",
		conn.Cmd{Script: deletePublishScript, Keys: []string{w.name, rw.ch}, Args: []string{scripts.WriteUnlockMessage, w.c.pub()}})
}

// Mode returns "read", "write", or "" when the lock is free. It blocks until the server answers or ctx ends.
func (rw *ReadWriteLock) Mode(ctx context.Context) (string, error) {
	return blocking(ctx, func() *future.Future[string] { return rw.ModeAsync(ctx) })
}

// ModeAsync is the asynchronous form of Mode.
func (rw *ReadWriteLock) ModeAsync(ctx context.Context) *future.Future[string] {
	w := &rw.write
	if err := w.checkCtx("ReadWriteLock.Mode", ctx); err != nil {
		return future.Completed("", err)
	}
	return future.Then(w.c.call(ctx, conn.Cmd{Args: []string{"HGET", w.name, "mode"}}),
		func(v resp.Value, err error) (string, error) {
			if err != nil {
				return "", notLockError(w.name, err)
			}
			s, err := v.AsString()
			if errors.Is(err, resp.ErrNil) {
				return "", nil
			}
			return s, err
		})
}

// RemainTimeToLive returns how long the lock still lasts (its longest hold), TTLNoKey when it is free. It blocks
// until the server answers or ctx ends.
func (rw *ReadWriteLock) RemainTimeToLive(ctx context.Context) (time.Duration, error) {
	return blocking(ctx, func() *future.Future[time.Duration] { return rw.RemainTimeToLiveAsync(ctx) })
}

// RemainTimeToLiveAsync is the asynchronous form of RemainTimeToLive.
func (rw *ReadWriteLock) RemainTimeToLiveAsync(ctx context.Context) *future.Future[time.Duration] {
	return rw.write.remainTimeToLive(ctx, "ReadWriteLock.RemainTimeToLive")
}

// Read half.

// The read half's rules: a read hold is shared, so a grant does not make the next waiter wait; read and write
// waiters wait on the lock's one channel, where a write unlock ("1") wakes them all.

func (r *ReadLock) attempt(lc *lockCall) (*conn.Script, []string, []string) {
	return rwReadAcquireScript, []string{r.name, rwHoldPrefix(r.name, lc.owner)},
		[]string{lc.leaseArg(), lc.owner, writeField(lc.owner)}
}

func (r *ReadLock) decode(v resp.Value, err error) outcome {
	if err != nil {
		return outcome{err: err}
	}
	return parseAcquire(v)
}

func (r *ReadLock) channel(*lockCall) string { return r.rw.ch }

func (r *ReadLock) wait(lc *lockCall) { lc.rule = wakeRW }

func (r *ReadLock) left(_ *lockCall, then func()) { runThen(then) }

func (r *ReadLock) ops() *acquireOps { return readOps }

// Name returns the lock's name.
func (r *ReadLock) Name() string { return r.name }

// Lock takes a read hold with the watchdog: it blocks until no writer (other than the owner) holds the lock, or
// ctx ends. Every call adds a hold (its own key); the held context is the owner's for all its read holds of this
// lock and is cancelled when the last one goes. An owner's read holds share one renewal: while any of them uses the
// watchdog, the watchdog renews all of them (as Redisson's does). Safe for concurrent use.
func (r *ReadLock) Lock(ctx context.Context) (context.Context, error) {
	return r.lock(ctx, formLock, -1, 0)
}

// LockAsync is the asynchronous form of Lock. It starts no goroutine.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (r *ReadLock) LockAsync(ctx context.Context) *future.Future[context.Context] {
	return r.lockAsync(ctx, formLock, -1, 0)
}

// LockLease takes a read hold for a fixed lease (at least 1 ms); the hold's key expires with it, independently of
// the owner's other holds. It blocks like Lock.
func (r *ReadLock) LockLease(ctx context.Context, lease time.Duration) (context.Context, error) {
	return r.lock(ctx, formLockLease, -1, lease)
}

// LockLeaseAsync is the asynchronous form of LockLease.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (r *ReadLock) LockLeaseAsync(ctx context.Context, lease time.Duration) *future.Future[context.Context] {
	return r.lockAsync(ctx, formLockLease, -1, lease)
}

// TryLock takes a read hold if it can within wait (0: one attempt) with lease (0: the watchdog). It returns
// ErrNotAcquired when the wait ran out, ctx's error when ctx ended first, an *OutcomeUnknownError as
// Lock.TryLock.
func (r *ReadLock) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	return r.lock(ctx, formTryLock, wait, lease)
}

// TryLockAsync is the asynchronous form of TryLock.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (r *ReadLock) TryLockAsync(ctx context.Context, wait, lease time.Duration) *future.Future[context.Context] {
	return r.lockAsync(ctx, formTryLock, wait, lease)
}

// Unlock releases the owner's newest read hold. The lock then lasts as long as its longest remaining hold; when none
// remains it is deleted and one waiter woken. It waits for the server's answer and returns ErrNotHeld when the owner
// holds no read hold. Its errors and its worst-case wait are Lock.Unlock's; bound the wait with
// UnlockAsync(held).Get(ctx). Safe for concurrent use.
func (r *ReadLock) Unlock(held context.Context) error {
	return r.unlockSync(held, "ReadLock.Unlock")
}

// UnlockAsync is the asynchronous form of Unlock.
func (r *ReadLock) UnlockAsync(held context.Context) *future.Future[struct{}] {
	return r.unlock(held, "ReadLock.Unlock")
}

// HoldCount returns how many read holds the owner held carries has (0 when none). It is bounded by the
// transport's response timeout, not by held's cancellation.
func (r *ReadLock) HoldCount(held context.Context) (int, error) {
	return blocking(background, func() *future.Future[int] { return r.HoldCountAsync(held) })
}

// HoldCountAsync is the asynchronous form of HoldCount.
func (r *ReadLock) HoldCountAsync(held context.Context) *future.Future[int] {
	return r.holdCount(held, "ReadLock.HoldCount")
}

// IsLocked reports whether the lock is held in read mode (by any reader), as Redisson's read lock's isLocked. It
// blocks until the server answers or ctx ends.
func (r *ReadLock) IsLocked(ctx context.Context) (bool, error) {
	return blocking(ctx, func() *future.Future[bool] { return r.IsLockedAsync(ctx) })
}

// IsLockedAsync is the asynchronous form of IsLocked.
func (r *ReadLock) IsLockedAsync(ctx context.Context) *future.Future[bool] {
	return r.rw.modeIs(ctx, "ReadLock.IsLocked", "read")
}

// RemainTimeToLive returns how long the lock still lasts (its longest hold, read or write: the halves share one
// key), TTLNoKey when it is free. It blocks until the server answers or ctx ends.
func (r *ReadLock) RemainTimeToLive(ctx context.Context) (time.Duration, error) {
	return blocking(ctx, func() *future.Future[time.Duration] { return r.RemainTimeToLiveAsync(ctx) })
}

// RemainTimeToLiveAsync is the asynchronous form of RemainTimeToLive.
func (r *ReadLock) RemainTimeToLiveAsync(ctx context.Context) *future.Future[time.Duration] {
	return r.remainTimeToLive(ctx, "ReadLock.RemainTimeToLive")
}

// ForceUnlock deletes the lock when it is in read mode, whatever readers hold it (their read holds' keys too), and
// wakes every waiter; it reports whether it did. A lock in write mode is left alone (its writer's read holds too):
// that is WriteLock.ForceUnlock's. This client's read holds of it end with cause ErrLockLost. It blocks until the
// server answers or ctx ends; a transport failure is retried.
func (r *ReadLock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	return r.ForceUnlockAsync(ctx).Get(ctx)
}

// ForceUnlockAsync is the asynchronous form of ForceUnlock.
func (r *ReadLock) ForceUnlockAsync(ctx context.Context) *future.Future[bool] {
	return r.rw.forceMode(ctx, "ReadLock.ForceUnlock", "read")
}

// Write half.

// The write half's rules: exclusive, on the lock's one channel.

func (wl *WriteLock) attempt(lc *lockCall) (*conn.Script, []string, []string) {
	return rwWriteAcquireScript, []string{wl.name}, []string{lc.leaseArg(), writeField(lc.owner), lc.owner}
}

// decode maps the script's RWUPGRADE error reply (the owner holds a read hold: it would wait for itself) to
// ErrLockUpgrade, which ends the call at once.
func (wl *WriteLock) decode(v resp.Value, err error) outcome {
	if isServerError(err, "RWUPGRADE") {
		return outcome{err: ErrLockUpgrade}
	}
	if err != nil {
		return outcome{err: err}
	}
	return parseAcquire(v)
}

func (wl *WriteLock) channel(*lockCall) string { return wl.rw.ch }

func (wl *WriteLock) wait(lc *lockCall) { lc.rule = wakeRW }

func (wl *WriteLock) left(_ *lockCall, then func()) { runThen(then) }

func (wl *WriteLock) ops() *acquireOps { return writeOps }

// Name returns the lock's name.
func (wl *WriteLock) Name() string { return wl.name }

// Lock takes the write lock with the watchdog: it blocks until no reader and no other writer holds the lock, or ctx
// ends. It returns ErrLockUpgrade at once when the owner holds a read hold and no write hold. Safe for concurrent
// use.
func (wl *WriteLock) Lock(ctx context.Context) (context.Context, error) {
	return wl.lock(ctx, formLock, -1, 0)
}

// LockAsync is the asynchronous form of Lock. It starts no goroutine.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (wl *WriteLock) LockAsync(ctx context.Context) *future.Future[context.Context] {
	return wl.lockAsync(ctx, formLock, -1, 0)
}

// LockLease takes the write lock for a fixed lease (at least 1 ms). It blocks like Lock.
func (wl *WriteLock) LockLease(ctx context.Context, lease time.Duration) (context.Context, error) {
	return wl.lock(ctx, formLockLease, -1, lease)
}

// LockLeaseAsync is the asynchronous form of LockLease.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (wl *WriteLock) LockLeaseAsync(ctx context.Context, lease time.Duration) *future.Future[context.Context] {
	return wl.lockAsync(ctx, formLockLease, -1, lease)
}

// TryLock takes the write lock if it can within wait (0: one attempt) with lease (0: the watchdog). It returns
// ErrNotAcquired when the wait ran out, ctx's error when ctx ended first, ErrLockUpgrade as Lock, an
// *OutcomeUnknownError as Lock.TryLock.
func (wl *WriteLock) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	return wl.lock(ctx, formTryLock, wait, lease)
}

// TryLockAsync is the asynchronous form of TryLock.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (wl *WriteLock) TryLockAsync(ctx context.Context, wait, lease time.Duration) *future.Future[context.Context] {
	return wl.lockAsync(ctx, formTryLock, wait, lease)
}

// Unlock releases one write hold; the last one deletes the lock (or, when the owner still has read holds, turns it to
// read mode) and wakes every waiter. It waits for the server's answer and returns ErrNotHeld when the owner does not
// hold the write lock. Its errors and its worst-case wait are Lock.Unlock's; bound the wait with
// UnlockAsync(held).Get(ctx). Safe for concurrent use.
func (wl *WriteLock) Unlock(held context.Context) error {
	return wl.unlockSync(held, "WriteLock.Unlock")
}

// UnlockAsync is the asynchronous form of Unlock.
func (wl *WriteLock) UnlockAsync(held context.Context) *future.Future[struct{}] {
	return wl.unlock(held, "WriteLock.Unlock")
}

// IsLocked reports whether a writer holds the lock. It blocks until the server answers or ctx ends.
func (wl *WriteLock) IsLocked(ctx context.Context) (bool, error) {
	return blocking(ctx, func() *future.Future[bool] { return wl.IsLockedAsync(ctx) })
}

// IsLockedAsync is the asynchronous form of IsLocked.
func (wl *WriteLock) IsLockedAsync(ctx context.Context) *future.Future[bool] {
	return wl.rw.modeIs(ctx, "WriteLock.IsLocked", "write")
}

// ForceUnlock deletes the lock when it is in write mode, whoever holds it (the writer's read holds go with it), and
// wakes every waiter; it reports whether it did. A lock in read mode is left alone: other owners' read holds are
// not the write lock's to end (Redisson's read-write force-unlock semantics). This client's holds of it end with
// cause ErrLockLost. It blocks until the server answers or ctx ends; a transport failure is retried.
func (wl *WriteLock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	return wl.ForceUnlockAsync(ctx).Get(ctx)
}

// ForceUnlockAsync is the asynchronous form of ForceUnlock.
func (wl *WriteLock) ForceUnlockAsync(ctx context.Context) *future.Future[bool] {
	return wl.rw.forceMode(ctx, "WriteLock.ForceUnlock", "write")
}

// modeIs asks whether the lock is in mode ("read" or "write").
func (rw *ReadWriteLock) modeIs(ctx context.Context, op, mode string) *future.Future[bool] {
	w := &rw.write
	if err := w.checkCtx(op, ctx); err != nil {
		return future.Completed(false, err)
	}
	return future.Then(w.c.call(ctx, conn.Cmd{Args: []string{"HGET", w.name, "mode"}}),
		func(v resp.Value, err error) (bool, error) {
			if err != nil {
				return false, err
			}
			s, err := v.AsString()
			if errors.Is(err, resp.ErrNil) {
				return false, nil
			}
			return s == mode, err
		})
}

// forceMode deletes the lock if it is in mode ("read" or "write"), with its read holds' keys, and then drops this
// client's holds that went with it: every hold of the lock for the write mode (the writer's read holds included),
// the read holds for the read mode. It is safe to resend (a second run finds the lock gone).
func (rw *ReadWriteLock) forceMode(ctx context.Context, op, mode string) *future.Future[bool] {
	w := &rw.write
	if err := w.checkCtx(op, ctx); err != nil {
		return future.Completed(false, err)
	}
	kinds := []holdKind{kindRead}
	if mode == "write" {
		kinds = append(kinds, kindWrite)
	}
	cmd := conn.Cmd{Script: rwForceUnlockScript, Keys: []string{w.name, rw.ch, hashTag(w.name)},
		Args: []string{mode, scripts.WriteUnlockMessage, w.c.pub()}}
	return future.Then(w.c.call(ctx, cmd), func(v resp.Value, err error) (bool, error) {
		n, err := intReply(v, err)
		if n == 1 {
			w.c.dropAll(w.sh, w.name, kinds...)
		}
		return n == 1, err
	})
}

// HoldCount returns how many write holds the owner held carries has (0 when none). It is bounded by the
// transport's response timeout, not by held's cancellation.
func (wl *WriteLock) HoldCount(held context.Context) (int, error) {
	return blocking(background, func() *future.Future[int] { return wl.HoldCountAsync(held) })
}

// HoldCountAsync is the asynchronous form of HoldCount.
func (wl *WriteLock) HoldCountAsync(held context.Context) *future.Future[int] {
	return wl.holdCount(held, "WriteLock.HoldCount")
}

var (
	_ lockRules = (*ReadLock)(nil)
	_ lockRules = (*WriteLock)(nil)
)

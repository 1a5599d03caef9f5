package rlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/future"
)

// MultiLock is Redisson's RedissonMultiLock: several locks taken as one. It is held when every one of its locks is
// held; acquiring takes them one by one and, when one cannot be taken within the wait, releases those it took.
//
// The locks are taken in the order of their names (then as given), whatever order they were passed in, so two
// MultiLocks over the same locks never deadlock each other (Redisson takes them in the order given and relies on
// randomised retries instead). The held context is cancelled as soon as any one lock is lost, and, with a lease, at
// the end of the validity: lease − time spent acquiring − drift (1% of the lease + 2 ms), as for RedLock. Unlock
// releases every lock and reports each failure (errors.Join), after which the held context is cancelled with
// ErrReleased.
//
// Every lock is held by one owner: the acquiring context's (a held context, or an owner pinned with WithOwner),
// or else one minted for the acquisition. The held context carries it (OwnerOf), IsHeldBy and HoldCount ask every
// lock about it, and a lock taken with the held context is taken by the same owner.
//
// A MultiLock is a cheap value safe for concurrent use; NewMultiLock does no I/O.
type MultiLock struct{ s *multiSet }

// NewMultiLock returns a MultiLock over locks (at least one). A nil lock is reported by the MultiLock's methods as
// an *ArgumentError.
func NewMultiLock(locks ...Locker) *MultiLock {
	return &MultiLock{s: newMultiSet("MultiLock", multiLockOps, locks, len(locks), startMultiLock)}
}

// multiAcq is one sequential acquisition of a MultiLock.
type multiAcq struct {
	s        *multiSet
	p        future.Promise[context.Context]
	ctx      context.Context
	wait     time.Duration
	lease    time.Duration
	start    time.Time
	deadline time.Time
	comps    []context.Context
}

// multiLockOps names MultiLock's acquire operations.
var multiLockOps = newAcquireOps("MultiLock.")

// startMultiLock starts an acquisition of the MultiLock s that is not a re-entry (multiSet.start): its locks one
// by one, in their order.
func startMultiLock(s *multiSet, ctx context.Context, wait, lease time.Duration) *future.Future[context.Context] {
	a := &multiAcq{s: s, ctx: ctx, wait: wait, lease: lease, start: time.Now(), comps: make([]context.Context, len(s.locks))}
	if wait >= 0 {
		a.deadline = a.start.Add(wait)
	}
	a.step(0)
	return a.p.Future()
}

// step takes the k-th lock in acquisition order, then the next.
func (a *multiAcq) step(k int) {
	s := a.s
	if k == len(s.order) {
		a.succeed()
		return
	}
	i := s.order[k]
	l := s.locks[i]
	var f *future.Future[context.Context]
	switch {
	case a.wait < 0 && a.lease == 0:
		f = l.LockAsync(a.ctx)
	case a.wait < 0:
		f = l.LockLeaseAsync(a.ctx, a.lease)
	default:
		f = l.TryLockAsync(a.ctx, max(time.Until(a.deadline), 0), a.lease)
	}
	f.OnComplete(func(held context.Context, err error) {
		if err != nil {
			if !errors.Is(err, ErrNotAcquired) && a.ctx.Err() == nil {
				err = fmt.Errorf("%s: lock %q: %w", s.kind, l.Name(), err)
			}
			a.fail(err)
			return
		}
		a.comps[i] = held
		a.step(k + 1)
	})
}

func (a *multiAcq) succeed() {
	until := validity(a.start, a.lease)
	if !until.IsZero() && !time.Now().Before(until) {
		a.fail(ErrNotAcquired) // acquiring took the whole lease: nothing is left of it
		return
	}
	h := a.s.newMultiHold(a.ctx, a.comps, until)
	if !succeed(a.s.log, &a.p, h.held) {
		a.s.unlock(h.held)
	}
}

// fail releases what was taken and then fails the call, so that a caller told the set was not acquired finds
// none of its locks still held.
func (a *multiAcq) fail(err error) {
	a.s.releaseAll(a.comps).OnComplete(func(struct{}, error) { fail(a.s.log, &a.p, err) })
}

// Lock takes every lock (each with the watchdog), waiting as long as ctx allows, and returns the held context. It
// blocks until all are held or ctx ends (then ctx's error, after releasing those taken). Passing a held context of
// this MultiLock re-enters every lock. Safe for concurrent use.
func (m *MultiLock) Lock(ctx context.Context) (context.Context, error) {
	return m.s.lock(ctx, formLock, -1, 0)
}

// LockAsync is the asynchronous form of Lock. It starts no goroutine.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (m *MultiLock) LockAsync(ctx context.Context) *future.Future[context.Context] {
	return m.s.lockAsync(ctx, formLock, -1, 0)
}

// LockLease takes every lock with lease (at least 1 ms); the held context's deadline is the validity (see
// MultiLock). It blocks like Lock.
func (m *MultiLock) LockLease(ctx context.Context, lease time.Duration) (context.Context, error) {
	return m.s.lock(ctx, formLockLease, -1, lease)
}

// LockLeaseAsync is the asynchronous form of LockLease.
func (m *MultiLock) LockLeaseAsync(ctx context.Context, lease time.Duration) *future.Future[context.Context] {
	return m.s.lockAsync(ctx, formLockLease, -1, lease)
}

// TryLock takes every lock within wait (0: one attempt each) with lease (0: the watchdog). It returns
// ErrNotAcquired when a lock could not be taken in time (the others are released), ctx's error when ctx ended,
// and otherwise the first error, naming its lock.
func (m *MultiLock) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	return m.s.lock(ctx, formTryLock, wait, lease)
}

// TryLockAsync is the asynchronous form of TryLock.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (m *MultiLock) TryLockAsync(ctx context.Context, wait, lease time.Duration) *future.Future[context.Context] {
	return m.s.lockAsync(ctx, formTryLock, wait, lease)
}

// Unlock releases every lock (one hold each) in parallel and returns the failures joined (errors.Is finds
// ErrNotHeld, a transport error...), each naming its lock; every lock is attempted. ErrNotHeld alone when held is
// not a held context of this MultiLock. It waits for every answer, each as long as Lock.Unlock may (the locks are
// released in parallel); bound the wait with UnlockAsync(held).Get(ctx).
func (m *MultiLock) Unlock(held context.Context) error { return m.s.unlockSync(held) }

// UnlockAsync is the asynchronous form of Unlock.
func (m *MultiLock) UnlockAsync(held context.Context) *future.Future[struct{}] {
	return m.s.unlock(held)
}

// IsHeldBy reports whether the owner held carries holds every lock of the MultiLock on the server (each lock's
// IsHeldBy). held is a held context of the MultiLock, or any context carrying an owner (OwnerOf); one without an
// owner holds nothing (false, without I/O). Like Lock.IsHeldBy it is bounded by the transport's response timeout,
// not by held's cancellation; it returns the locks' errors joined, each naming its lock.
func (m *MultiLock) IsHeldBy(held context.Context) (bool, error) {
	return blocking(background, func() *future.Future[bool] { return m.IsHeldByAsync(held) })
}

// IsHeldByAsync is the asynchronous form of IsHeldBy.
func (m *MultiLock) IsHeldByAsync(held context.Context) *future.Future[bool] {
	return m.s.isHeldBy(held, "IsHeldBy")
}

// HoldCount returns how many times the owner held carries holds the MultiLock: the smallest hold count among its
// locks (each acquisition of the MultiLock adds one hold to every lock). Bounded like IsHeldBy.
func (m *MultiLock) HoldCount(held context.Context) (int, error) {
	return blocking(background, func() *future.Future[int] { return m.HoldCountAsync(held) })
}

// HoldCountAsync is the asynchronous form of HoldCount.
func (m *MultiLock) HoldCountAsync(held context.Context) *future.Future[int] {
	return m.s.holdCount(held, "HoldCount")
}

package rlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/future"
)

// RedLock is Redisson's RedissonRedLock, the Redlock algorithm: one lock of the same name on each of N independent
// masters (N Clients), held when a majority (N/2 + 1) is held. An attempt tries every master in parallel; with a
// majority it is held for the validity lease − time spent acquiring − drift (1% of the lease + 2 ms): the held
// context's deadline. Without lease the locks are renewed by their watchdogs and the held context lasts until
// fewer than a majority remain held.
//
// A round that gets no majority releases what it took and, while the wait allows, tries again (each master waits
// a random part of the remaining wait, so competing clients do not stay split). When errors alone (masters down or
// unreachable) make a majority impossible, the call fails at once with a *QuorumError (ErrNoQuorum) naming each
// master's error: with 2 of 5 masters down it still works, with 3 down it fails fast. Unlock releases every master
// and reports each failure.
//
// As for a MultiLock, every lock is held by one owner, which the held context carries (OwnerOf); IsHeldBy and
// HoldCount count a majority of the masters.
//
// A RedLock is a cheap value safe for concurrent use; NewRedLock does no I/O.
type RedLock struct{ s *multiSet }

// NewRedLock returns a RedLock over locks, one per independent master (at least one; three or five in practice).
func NewRedLock(locks ...Locker) *RedLock {
	return &RedLock{s: newMultiSet("RedLock", redLockOps, locks, len(locks)/2+1, startRedLock)}
}

// redBaseWait is how long each master may wait per round when the call itself has no bound (Lock): Redisson's
// 1.5 s per lock.
const redBaseWait = 1500 * time.Millisecond

// redAcq is one RedLock acquisition: rounds of parallel attempts.
type redAcq struct {
	s        *multiSet
	p        future.Promise[context.Context]
	ctx      context.Context
	wait     time.Duration
	lease    time.Duration
	deadline time.Time
}

// redRound is one round's state.
type redRound struct {
	a      *redAcq
	start  time.Time
	cancel context.CancelFunc

	mu      sync.Mutex // guards the fields below
	decided bool
	hold    *multiHold // the round won: late grants join it
	left    int        // attempts still in flight
	comps   []context.Context
	ok      int
	refused int
	errs    map[string]error
}

// redLockOps names RedLock's acquire operations.
var redLockOps = newAcquireOps("RedLock.")

// startRedLock starts an acquisition of the RedLock s that is not a re-entry (multiSet.start): rounds of parallel
// attempts.
func startRedLock(s *multiSet, ctx context.Context, wait, lease time.Duration) *future.Future[context.Context] {
	a := &redAcq{s: s, ctx: ctx, wait: wait, lease: lease}
	if wait >= 0 {
		a.deadline = time.Now().Add(wait)
	}
	a.round()
	return a.p.Future()
}

// round tries every master in parallel.
func (a *redAcq) round() {
	s := a.s
	n := len(s.locks)
	var per time.Duration
	switch {
	case a.wait == 0:
	case a.wait < 0:
		per = redBaseWait/2 + rand.N(redBaseWait/2)
	default:
		left := time.Until(a.deadline)
		if left <= 0 {
			fail(a.s.log, &a.p, ErrNotAcquired)
			return
		}
		// Redisson gives each lock remaining/N; a random share of it keeps competing clients from splitting the
		// masters the same way round after round.
		share := max(left/time.Duration(n), time.Millisecond)
		per = share/2 + rand.N(share/2+1)
	}
	rctx, cancel := context.WithCancel(a.ctx)
	r := &redRound{a: a, start: time.Now(), cancel: cancel, comps: make([]context.Context, n), errs: map[string]error{},
		left: n}
	for i, l := range s.locks {
		var f *future.Future[context.Context]
		if pl, ok := l.(*Lock); ok {
			// Without a place in the master's queue of waiters: the round gives up after per, and a place would
			// outlive it (see lockObject.acquireQueued).
			_, f = pl.acquireQueued(rctx, "TryLockAsync", per, a.lease, true, false)
		} else {
			f = l.TryLockAsync(rctx, per, a.lease)
		}
		f.OnComplete(func(held context.Context, err error) { r.result(i, held, err) })
	}
}

// result records one master's outcome and decides the round as soon as its outcome is certain.
func (r *redRound) result(i int, held context.Context, err error) {
	a, s := r.a, r.a.s
	r.mu.Lock()
	r.left--
	if r.decided {
		h, last := r.hold, r.left == 0
		r.mu.Unlock()
		if err == nil && (h == nil || !h.join(i, held)) {
			s.locks[i].UnlockAsync(held) // late grant of a round lost, or of a set released meanwhile
		}
		if last {
			r.cancel()
		}
		return
	}
	switch {
	case err == nil:
		r.comps[i], r.ok = held, r.ok+1
	case errors.Is(err, ErrNotAcquired):
		r.refused++
	case a.ctx.Err() != nil:
		r.decided = true
		r.mu.Unlock()
		r.cancel()
		s.releaseAll(r.comps).OnComplete(func(struct{}, error) { fail(a.s.log, &a.p, a.ctx.Err()) })
		return
	default:
		r.errs[fmt.Sprintf("#%d %s", i, s.locks[i].Name())] = err
	}
	n := len(s.locks)
	failed := len(r.errs)
	pending := n - r.ok - r.refused - failed
	var outcome int // 0 wait, 1 majority, 2 no quorum (errors), 3 round lost
	switch {
	case r.ok >= s.quorum:
		outcome = 1
	case failed > n-s.quorum:
		outcome = 2
	case r.ok+pending < s.quorum:
		outcome = 3
	}
	if outcome == 0 {
		r.mu.Unlock()
		return
	}
	r.decided = true
	comps := r.comps
	until := validity(r.start, a.lease)
	if outcome == 1 && (until.IsZero() || time.Now().Before(until)) {
		// Won. The attempts still in flight go on: a master that grants late joins the hold (more masters held
		// is a safer lock); the final Unlock abandons those still waiting.
		h := s.newMultiHold(a.ctx, comps, until)
		h.stopPending = r.cancel
		r.hold = h
		last := r.left == 0
		r.mu.Unlock()
		if last {
			r.cancel()
		}
		if !succeed(a.s.log, &a.p, h.held) {
			s.unlock(h.held)
		}
		return
	}
	r.mu.Unlock()
	r.cancel() // attempts still pending are abandoned (a grant in flight is released)
	// What was taken is released before the outcome is reported or the next round starts.
	rel := s.releaseAll(comps)
	switch outcome {
	case 2:
		qe := &QuorumError{Quorum: s.quorum, Total: n, Acquired: r.ok, Errors: r.errs}
		rel.OnComplete(func(struct{}, error) { fail(a.s.log, &a.p, qe) })
	default: // a round lost, or won too late (the acquisition took the whole validity)
		rel.OnComplete(func(struct{}, error) { a.retryOrFail() })
	}
}

// retryOrFail starts another round while the wait allows.
func (a *redAcq) retryOrFail() {
	if a.wait == 0 || (a.wait > 0 && !time.Now().Before(a.deadline)) || a.ctx.Err() != nil {
		if err := a.ctx.Err(); err != nil {
			fail(a.s.log, &a.p, err)
			return
		}
		fail(a.s.log, &a.p, ErrNotAcquired)
		return
	}
	a.round()
}

// Lock takes a majority of the locks (each with the watchdog), trying in rounds as long as ctx allows, and returns
// the held context. It returns a *QuorumError at once when too many masters fail with errors, ctx's error when ctx
// ended. Passing a held context of this RedLock re-enters the held locks. Safe for concurrent use.
func (r *RedLock) Lock(ctx context.Context) (context.Context, error) {
	return r.s.lock(ctx, formLock, -1, 0)
}

// LockAsync is the asynchronous form of Lock. It starts no goroutine.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (r *RedLock) LockAsync(ctx context.Context) *future.Future[context.Context] {
	return r.s.lockAsync(ctx, formLock, -1, 0)
}

// LockLease takes a majority with lease (at least 1 ms); the held context's deadline is the validity. It blocks
// like Lock.
func (r *RedLock) LockLease(ctx context.Context, lease time.Duration) (context.Context, error) {
	return r.s.lock(ctx, formLockLease, -1, lease)
}

// LockLeaseAsync is the asynchronous form of LockLease.
func (r *RedLock) LockLeaseAsync(ctx context.Context, lease time.Duration) *future.Future[context.Context] {
	return r.s.lockAsync(ctx, formLockLease, -1, lease)
}

// TryLock takes a majority within wait (0: one round of single attempts) with lease (0: the watchdogs). It returns
// ErrNotAcquired when no majority could be had in time, a *QuorumError when errors made it impossible, ctx's error
// when ctx ended.
func (r *RedLock) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	return r.s.lock(ctx, formTryLock, wait, lease)
}

// TryLockAsync is the asynchronous form of TryLock.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (r *RedLock) TryLockAsync(ctx context.Context, wait, lease time.Duration) *future.Future[context.Context] {
	return r.s.lockAsync(ctx, formTryLock, wait, lease)
}

// Unlock releases every held lock in parallel and returns the failures joined, each naming its lock (a master that
// is down reports its transport error; the others are released all the same). It waits for every answer, each as
// long as Lock.Unlock may (the locks are released in parallel); bound the wait with UnlockAsync(held).Get(ctx).
func (r *RedLock) Unlock(held context.Context) error { return r.s.unlockSync(held) }

// UnlockAsync is the asynchronous form of Unlock.
func (r *RedLock) UnlockAsync(held context.Context) *future.Future[struct{}] { return r.s.unlock(held) }

// IsHeldBy reports whether the owner held carries holds a majority of the RedLock's locks on the server. held is a
// held context of the RedLock, or any context carrying an owner (OwnerOf); one without an owner holds nothing
// (false, without I/O). A master that cannot be asked counts as not held; the errors are returned, joined, when a
// majority could not be asked. Bounded by the transport's response timeout, not by held's cancellation.
func (r *RedLock) IsHeldBy(held context.Context) (bool, error) {
	return blocking(background, func() *future.Future[bool] { return r.IsHeldByAsync(held) })
}

// IsHeldByAsync is the asynchronous form of IsHeldBy.
func (r *RedLock) IsHeldByAsync(held context.Context) *future.Future[bool] {
	return r.s.isHeldBy(held, "IsHeldBy")
}

// HoldCount returns how many times the owner held carries holds the RedLock: the hold count that a majority of its
// locks reach. Bounded like IsHeldBy.
func (r *RedLock) HoldCount(held context.Context) (int, error) {
	return blocking(background, func() *future.Future[int] { return r.HoldCountAsync(held) })
}

// HoldCountAsync is the asynchronous form of HoldCount.
func (r *RedLock) HoldCountAsync(held context.Context) *future.Future[int] {
	return r.s.holdCount(held, "HoldCount")
}

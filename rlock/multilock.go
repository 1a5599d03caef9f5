package rlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/future"
)

// Locker is a lock that MultiLock and RedLock combine. *Lock, *FairLock, *ReadLock and *WriteLock implement it;
// the locks of one MultiLock or RedLock may come from different Clients (RedLock: one per independent master).
type Locker interface {
	Name() string
	LockAsync(ctx context.Context) *future.Future[context.Context]
	LockLeaseAsync(ctx context.Context, lease time.Duration) *future.Future[context.Context]
	TryLockAsync(ctx context.Context, wait, lease time.Duration) *future.Future[context.Context]
	UnlockAsync(held context.Context) *future.Future[struct{}]
}

var (
	_ Locker = (*Lock)(nil)
	_ Locker = (*FairLock)(nil)
	_ Locker = (*ReadLock)(nil)
	_ Locker = (*WriteLock)(nil)
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
	return &MultiLock{s: newMultiSet("MultiLock", locks, len(locks))}
}

// multiSet is the implementation shared by MultiLock and RedLock.
type multiSet struct {
	kind   string
	locks  []Locker
	order  []int // acquisition order (MultiLock)
	quorum int
}

func newMultiSet(kind string, locks []Locker, quorum int) *multiSet {
	s := &multiSet{kind: kind, locks: slices.Clone(locks), quorum: quorum}
	s.order = make([]int, len(locks))
	for i := range s.order {
		s.order[i] = i
	}
	sort.SliceStable(s.order, func(a, b int) bool {
		la, lb := s.locks[s.order[a]], s.locks[s.order[b]]
		return la != nil && lb != nil && la.Name() < lb.Name()
	})
	return s
}

func (s *multiSet) check(op string) error {
	if len(s.locks) == 0 {
		return &ArgumentError{Op: s.kind + "." + op, Arg: "locks", Reason: "at least one lock is needed"}
	}
	for i, l := range s.locks {
		if l == nil {
			return &ArgumentError{Op: s.kind + "." + op, Arg: fmt.Sprintf("locks[%d]", i), Value: "nil", Reason: "must be a lock"}
		}
	}
	return nil
}

// multiKey finds the multiHold of a held context.
type multiKey struct{}

// multiHoldState is the life cycle of a multiHold: held, then released (by the final Unlock).
type multiHoldState uint8

const (
	multiHeld multiHoldState = iota
	multiReleased
)

// multiHold is a MultiLock or RedLock held: the held component contexts and the combined held context, which is
// cancelled when fewer than quorum components remain held, when the validity ends, or at the final Unlock.
type multiHold struct {
	set    *multiSet
	parent context.Context
	held   context.Context
	cancel context.CancelCauseFunc
	stopDL context.CancelFunc // releases the validity deadline's timer; nil without lease

	mu    sync.Mutex // guards the fields below
	state multiHoldState
	comps []context.Context // held component contexts, by index; nil = not held
	alive int
	holds int // acquisitions not yet released (re-entries count)
	stops []func() bool
	// stopPending abandons the attempts of the winning RedLock round still in flight (a grant among them is
	// released); called by the final Unlock. Nil for a MultiLock.
	stopPending context.CancelFunc
}

// join adds a component granted after the set was already held (a RedLock master that answered late). It reports
// false when the set was released meanwhile: the caller releases the grant.
func (h *multiHold) join(i int, c context.Context) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != multiHeld || h.comps[i] != nil {
		return false
	}
	h.comps[i] = c
	h.alive++
	h.stops = append(h.stops, context.AfterFunc(c, func() { h.componentEnded(i, c) }))
	return true
}

// newMultiHold builds the held context over comps and watches the components (a registration each, no goroutine
// until one ends).
func (s *multiSet) newMultiHold(parent context.Context, comps []context.Context, validUntil time.Time) *multiHold {
	h := &multiHold{set: s, parent: parent, comps: comps, holds: 1}
	base, cancel := context.WithCancelCause(h)
	h.cancel = cancel
	h.held = base
	if !validUntil.IsZero() {
		h.held, h.stopDL = context.WithDeadlineCause(base, validUntil, ErrLeaseExpired)
	}
	h.mu.Lock()
	for i, c := range comps {
		if c == nil {
			continue
		}
		h.alive++
		h.stops = append(h.stops, context.AfterFunc(c, func() { h.componentEnded(i, c) }))
	}
	h.mu.Unlock()
	return h
}

// componentEnded reacts to a component's held context ending (lost, expired, force-unlocked): below quorum, the
// combined held context is cancelled with the component's cause.
func (h *multiHold) componentEnded(i int, c context.Context) {
	h.mu.Lock()
	if h.state != multiHeld || h.comps[i] != c {
		h.mu.Unlock()
		return
	}
	h.alive--
	below := h.alive < h.set.quorum
	h.mu.Unlock()
	if below {
		cause := context.Cause(c)
		if cause == nil || errors.Is(cause, ErrReleased) {
			cause = ErrLockLost
		}
		h.cancel(cause)
	}
}

// Deadline reports no deadline: the validity, when there is one, is the held context's.
func (h *multiHold) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns nil: the held context above the hold is the one cancelled.
func (h *multiHold) Done() <-chan struct{} { return nil }

// Err returns nil.
func (h *multiHold) Err() error { return nil }

// Value returns the hold for multiKey and otherwise what the acquiring context holds.
func (h *multiHold) Value(key any) any {
	if _, ok := key.(multiKey); ok {
		return h
	}
	return h.parent.Value(key)
}

// String names the held set, for context printing.
func (h *multiHold) String() string { return "rlock.Held(" + h.set.kind + ")" }

// holdOf returns the multiHold of held when it is a hold of the same set as s: the same kind over locks of the
// same names in the same order (handles are cheap values, so an equal set built again is the same set).
func (s *multiSet) holdOf(held context.Context) *multiHold {
	if held == nil {
		return nil
	}
	h, _ := held.Value(multiKey{}).(*multiHold)
	if h == nil || h.set.kind != s.kind || len(h.set.locks) != len(s.locks) {
		return nil
	}
	for i, l := range s.locks {
		if l == nil || h.set.locks[i].Name() != l.Name() {
			return nil
		}
	}
	return h
}

// unlock releases one acquisition of the set held by held: one hold of every held component, in parallel. Every
// component is released even when some fail; the failures are joined, each naming its lock. The final Unlock
// cancels the held context with ErrReleased.
func (s *multiSet) unlock(held context.Context) *future.Future[struct{}] {
	h := s.holdOf(held)
	if h == nil {
		return future.Completed(struct{}{}, ErrNotHeld)
	}
	h.mu.Lock()
	if h.state != multiHeld {
		h.mu.Unlock()
		return future.Completed(struct{}{}, ErrNotHeld)
	}
	h.holds--
	final := h.holds == 0
	var stops []func() bool
	var stopPending context.CancelFunc
	if final {
		h.state = multiReleased
		stops, h.stops = h.stops, nil
		stopPending = h.stopPending
	}
	comps := slices.Clone(h.comps)
	h.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	if stopPending != nil {
		stopPending()
	}
	p := future.NewPromise[struct{}]()
	s.releaseAll(comps).OnComplete(func(_ struct{}, err error) {
		if final {
			h.cancel(ErrReleased)
			if h.stopDL != nil {
				h.stopDL()
			}
		}
		p.Complete(struct{}{}, err)
	})
	return p.Future()
}

// releaseAll releases one hold of each held component in parallel and joins the failures, each naming its lock.
// Callbacks may run inline (a future already complete), so no mutex is held while they are registered.
func (s *multiSet) releaseAll(comps []context.Context) *future.Future[struct{}] {
	p := future.NewPromise[struct{}]()
	var mu sync.Mutex // guards errs and left
	var errs []error
	left := 1
	done := func(err error) {
		mu.Lock()
		if err != nil {
			errs = append(errs, err)
		}
		left--
		last := left == 0
		mu.Unlock()
		if last {
			p.Complete(struct{}{}, errors.Join(errs...))
		}
	}
	for _, c := range comps {
		if c != nil {
			left++
		}
	}
	for i, c := range comps {
		if c == nil {
			continue
		}
		name := s.locks[i].Name()
		s.locks[i].UnlockAsync(c).OnComplete(func(_ struct{}, err error) {
			if err != nil {
				err = fmt.Errorf("%s: unlock %q: %w", s.kind, name, err)
			}
			done(err)
		})
	}
	done(nil)
	return p.Future()
}

// validity is the end of a held set's validity: start + lease − drift, the drift being 1% of the lease plus 2 ms
// (the RedLock algorithm's allowance for clock-rate differences between the servers). Zero without lease.
func validity(start time.Time, lease time.Duration) time.Time {
	if lease == 0 {
		return time.Time{}
	}
	return start.Add(lease - lease/100 - 2*time.Millisecond)
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

func (m *MultiLock) acquire(ctx context.Context, op string, wait, lease time.Duration) *future.Future[context.Context] {
	s := m.s
	ctx, prev, err := s.begin(ctx, op, lease)
	switch {
	case err != nil:
		return future.Completed[context.Context](nil, err)
	case prev != nil:
		return s.reenter(prev, lease)
	}
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
	if !a.p.Succeed(h.held) {
		a.s.unlock(h.held)
	}
}

// fail releases what was taken and then fails the call, so that a caller told the set was not acquired finds
// none of its locks still held.
func (a *multiAcq) fail(err error) {
	a.s.releaseAll(a.comps).OnComplete(func(struct{}, error) { a.p.Fail(err) })
}

// reenter re-acquires every held component with its held context (an immediate re-entry each).
func (s *multiSet) reenter(prev *multiHold, lease time.Duration) *future.Future[context.Context] {
	prev.mu.Lock()
	if prev.state != multiHeld {
		prev.mu.Unlock()
		return future.Completed[context.Context](nil, ErrNotHeld)
	}
	comps := slices.Clone(prev.comps)
	prev.mu.Unlock()
	p := future.NewPromise[context.Context]()
	var mu sync.Mutex // guards the fields below; never held while a callback is registered
	got := make([]context.Context, len(comps))
	ok, left := 0, 1
	var firstErr error
	finish := func() {
		if ok < s.quorum {
			if firstErr == nil {
				firstErr = ErrLockLost
			}
			err := firstErr
			s.releaseAll(got).OnComplete(func(struct{}, error) { p.Fail(err) })
			return
		}
		prev.mu.Lock()
		if prev.state != multiHeld {
			prev.mu.Unlock()
			s.releaseAll(got)
			p.Fail(ErrNotHeld)
			return
		}
		prev.holds++
		prev.mu.Unlock()
		p.Succeed(prev.held)
	}
	arrive := func(i int, h context.Context, err error) {
		mu.Lock()
		switch {
		case i < 0: // the guard that keeps finish from running before every component is registered
		case err == nil:
			got[i] = h
			ok++
		case firstErr == nil:
			firstErr = err
		}
		left--
		last := left == 0
		mu.Unlock()
		if last {
			finish()
		}
	}
	for _, c := range comps {
		if c != nil {
			left++
		}
	}
	for i, c := range comps {
		if c == nil {
			continue
		}
		s.locks[i].TryLockAsync(c, 0, lease).OnComplete(func(h context.Context, err error) { arrive(i, h, err) })
	}
	arrive(-1, nil, nil)
	return p.Future()
}

// multiSync waits for an acquisition for a blocking call; when ctx ends first, the acquisition is abandoned and
// whatever it obtains is released. start starts it, unless the call is made inside a callback (ErrInCallback).
func (s *multiSet) multiSync(ctx context.Context, start func() *future.Future[context.Context]) (context.Context, error) {
	if err := inCallback(); err != nil {
		return nil, err
	}
	fut := start()
	if ctx == nil {
		return fut.Get(background) // refused: an *ArgumentError
	}
	held, err := fut.Get(ctx)
	if err != nil && ctx.Err() != nil {
		// Nobody will see what the acquisition obtains, now or when it completes.
		fut.OnComplete(func(h context.Context, err error) {
			if err == nil {
				s.unlock(h)
			}
		})
		return nil, ctx.Err()
	}
	return held, err
}

// Lock takes every lock (each with the watchdog), waiting as long as ctx allows, and returns the held context. It
// blocks until all are held or ctx ends (then ctx's error, after releasing those taken). Passing a held context of
// this MultiLock re-enters every lock. Safe for concurrent use.
func (m *MultiLock) Lock(ctx context.Context) (context.Context, error) {
	return m.s.multiSync(ctx, func() *future.Future[context.Context] { return m.acquire(ctx, "Lock", -1, 0) })
}

// LockAsync is the asynchronous form of Lock. It starts no goroutine.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (m *MultiLock) LockAsync(ctx context.Context) *future.Future[context.Context] {
	return m.acquire(ctx, "LockAsync", -1, 0)
}

// LockLease takes every lock with lease (at least 1 ms); the held context's deadline is the validity (see
// MultiLock). It blocks like Lock.
func (m *MultiLock) LockLease(ctx context.Context, lease time.Duration) (context.Context, error) {
	if err := leaseFormError("MultiLock.LockLease", lease); err != nil {
		return nil, err
	}
	return m.s.multiSync(ctx, func() *future.Future[context.Context] { return m.acquire(ctx, "LockLease", -1, lease) })
}

// LockLeaseAsync is the asynchronous form of LockLease.
func (m *MultiLock) LockLeaseAsync(ctx context.Context, lease time.Duration) *future.Future[context.Context] {
	if err := leaseFormError("MultiLock.LockLeaseAsync", lease); err != nil {
		return future.Completed[context.Context](nil, err)
	}
	return m.acquire(ctx, "LockLeaseAsync", -1, lease)
}

// TryLock takes every lock within wait (0: one attempt each) with lease (0: the watchdog). It returns
// ErrNotAcquired when a lock could not be taken in time (the others are released), ctx's error when ctx ended,
// and otherwise the first error, naming its lock.
func (m *MultiLock) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	if err := tryFormError("MultiLock.TryLock", wait); err != nil {
		return nil, err
	}
	return m.s.multiSync(ctx, func() *future.Future[context.Context] { return m.acquire(ctx, "TryLock", wait, lease) })
}

// TryLockAsync is the asynchronous form of TryLock.
// Get's context bounds only the wait for the future, as it does for LockAsync: to abandon the acquire, cancel
// ctx, and give back a lock the future reports granted (see Lock.LockAsync).
func (m *MultiLock) TryLockAsync(ctx context.Context, wait, lease time.Duration) *future.Future[context.Context] {
	if err := tryFormError("MultiLock.TryLockAsync", wait); err != nil {
		return future.Completed[context.Context](nil, err)
	}
	return m.acquire(ctx, "TryLockAsync", wait, lease)
}

// Unlock releases every lock (one hold each) in parallel and returns the failures joined (errors.Is finds
// ErrNotHeld, a transport error...), each naming its lock; every lock is attempted. ErrNotHeld alone when held is
// not a held context of this MultiLock. It waits for every answer, each as long as Lock.Unlock may (the locks are
// released in parallel); bound the wait with UnlockAsync(held).Get(ctx).
func (m *MultiLock) Unlock(held context.Context) error {
	if err := inCallback(); err != nil {
		return err
	}
	_, err := m.s.unlock(held).Get(background)
	return err
}

// UnlockAsync is the asynchronous form of Unlock.
func (m *MultiLock) UnlockAsync(held context.Context) *future.Future[struct{}] {
	return m.s.unlock(held)
}

// IsHeldBy reports whether the owner held carries holds every lock of the MultiLock on the server (each lock's
// IsHeldBy). held is a held context of the MultiLock, or any context carrying an owner (OwnerOf); one without an
// owner holds nothing (false, without I/O). Like Lock.IsHeldBy it is bounded by the transport's response timeout,
// not by held's cancellation; it returns the locks' errors joined, each naming its lock.
func (m *MultiLock) IsHeldBy(held context.Context) (bool, error) {
	return m.IsHeldByAsync(held).Get(background)
}

// IsHeldByAsync is the asynchronous form of IsHeldBy.
func (m *MultiLock) IsHeldByAsync(held context.Context) *future.Future[bool] {
	return m.s.isHeldBy(held, "IsHeldBy")
}

// HoldCount returns how many times the owner held carries holds the MultiLock: the smallest hold count among its
// locks (each acquisition of the MultiLock adds one hold to every lock). Bounded like IsHeldBy.
func (m *MultiLock) HoldCount(held context.Context) (int, error) {
	return m.HoldCountAsync(held).Get(background)
}

// HoldCountAsync is the asynchronous form of HoldCount.
func (m *MultiLock) HoldCountAsync(held context.Context) *future.Future[int] {
	return m.s.holdCount(held, "HoldCount")
}

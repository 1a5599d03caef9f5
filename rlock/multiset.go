package rlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/future"
)

// The set of locks that MultiLock and RedLock share: its acquire façade (by form, as every lock's), its re-entry,
// its release of every lock, and the validity of a set held with a lease. The two differ only in how an
// acquisition that is not a re-entry runs (multiSet.start): MultiLock's sequence (multilock.go), RedLock's rounds
// (redlock.go). The owner every lock of a set is held by, and the queries on it, are in multiowner.go; the held
// set in multihold.go.

// multiSet is the implementation shared by MultiLock and RedLock.
type multiSet struct {
	kind   string
	locks  []Locker
	order  []int // acquisition order (MultiLock)
	quorum int
	ops    *acquireOps // the acquire operations, named after kind
	// start starts an acquisition that is not a re-entry, once begin has validated it: MultiLock's sequence,
	// RedLock's rounds.
	start func(s *multiSet, ctx context.Context, wait, lease time.Duration) *future.Future[context.Context]
	log   *slog.Logger // where a panic in a caller's callback is logged: the first component's client's
}

func newMultiSet(kind string, ops *acquireOps, locks []Locker, quorum int,
	start func(*multiSet, context.Context, time.Duration, time.Duration) *future.Future[context.Context]) *multiSet {
	s := &multiSet{kind: kind, locks: slices.Clone(locks), quorum: quorum, ops: ops, start: start,
		log: loggerOf(locks)}
	s.order = make([]int, len(locks))
	for i := range s.order {
		s.order[i] = i
	}
	sort.SliceStable(s.order, func(a, b int) bool {
		la, lb := s.locks[s.order[a]], s.locks[s.order[b]]
		return !nilLocker(la) && !nilLocker(lb) && la.Name() < lb.Name()
	})
	return s
}

// nilLocker reports whether l is nil, or a nil pointer in a Locker (a nil *Lock): either is bad input, reported
// by check, and has no name to sort or compare by.
func nilLocker(l Locker) bool {
	if l == nil {
		return true
	}
	v := reflect.ValueOf(l)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func (s *multiSet) check(op string) error {
	if len(s.locks) == 0 {
		return &ArgumentError{Op: s.kind + "." + op, Arg: "locks", Reason: "at least one lock is needed"}
	}
	for i, l := range s.locks {
		if nilLocker(l) {
			return &ArgumentError{Op: s.kind + "." + op, Arg: fmt.Sprintf("locks[%d]", i), Value: "nil", Reason: "must be a lock"}
		}
	}
	return nil
}

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
		if nilLocker(l) || h.set.locks[i].Name() != l.Name() {
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
		complete(s.log, p, struct{}{}, err)
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
			complete(s.log, p, struct{}{}, errors.Join(errs...))
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
			s.releaseAll(got).OnComplete(func(struct{}, error) { fail(s.log, p, err) })
			return
		}
		prev.mu.Lock()
		if prev.state != multiHeld {
			prev.mu.Unlock()
			s.releaseAll(got)
			fail(s.log, p, ErrNotHeld)
			return
		}
		prev.holds++
		prev.mu.Unlock()
		succeed(s.log, p, prev.held)
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

// lock runs an acquisition of the set to completion for a blocking call (MultiLock's and RedLock's Lock,
// LockLease and TryLock, by form); see multiSync.
func (s *multiSet) lock(ctx context.Context, form acquireForm, wait, lease time.Duration) (context.Context, error) {
	if err := form.argError(s.ops.name(form, false), wait, lease); err != nil {
		return nil, err
	}
	op := plainOps.name(form, false) // begin names the set's kind
	return s.multiSync(ctx, func() *future.Future[context.Context] { return s.acquire(ctx, op, wait, lease) })
}

// lockAsync starts an acquisition of the set for an async call (MultiLock's and RedLock's LockAsync,
// LockLeaseAsync and TryLockAsync, by form).
func (s *multiSet) lockAsync(ctx context.Context, form acquireForm, wait, lease time.Duration) *future.Future[context.Context] {
	if err := form.argError(s.ops.name(form, true), wait, lease); err != nil {
		return future.Completed[context.Context](nil, err)
	}
	return s.acquire(ctx, plainOps.name(form, true), wait, lease)
}

// acquire validates an acquisition (begin) and starts it: a re-entry when ctx is a held context of the set, else
// the kind's own (start).
func (s *multiSet) acquire(ctx context.Context, op string, wait, lease time.Duration) *future.Future[context.Context] {
	ctx, prev, err := s.begin(ctx, op, lease)
	switch {
	case err != nil:
		return future.Completed[context.Context](nil, err)
	case prev != nil:
		return s.reenter(prev, lease)
	}
	return s.start(s, ctx, wait, lease)
}

// unlockSync releases one acquisition of the set for a blocking Unlock, waiting for every lock's answer.
func (s *multiSet) unlockSync(held context.Context) error {
	if err := inCallback(); err != nil {
		return err
	}
	_, err := s.unlock(held).Get(background)
	return err
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

// validity is the end of a held set's validity: start + lease − drift, the drift being 1% of the lease plus 2 ms
// (the RedLock algorithm's allowance for clock-rate differences between the servers). Zero without lease.
func validity(start time.Time, lease time.Duration) time.Time {
	if lease == 0 {
		return time.Time{}
	}
	return start.Add(lease - lease/100 - 2*time.Millisecond)
}

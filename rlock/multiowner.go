package rlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/locksmith-go/locksmith/future"
)

// The owner of a MultiLock or RedLock, and the queries on it.
//
// Every lock of a set is held by one owner, as Redisson's MultiLock holds all its locks with one thread id: the
// owner the acquiring context carries (a held context, or one pinned with WithOwner), or else a new owner id
// minted once for the whole acquisition and pinned on the context every lock is acquired with. The set's held
// context carries that owner (OwnerOf reports it), so IsHeldBy and HoldCount can ask every lock about it, and a
// plain lock taken with the set's held context is taken by the same owner.

// setLock is what a set needs of its locks beyond Locker, which every lock of this package has: its Client (to
// mint an owner) and a hold-count query.
type setLock interface {
	client() *Client
	holdCount(held context.Context, op string) *future.Future[int]
}

// begin validates an acquisition of the set and returns the context its locks are acquired with (carrying the
// set's owner), or prev, the set's hold when ctx is a held context of this set (a re-entry).
func (s *multiSet) begin(ctx context.Context, op string, lease time.Duration) (context.Context, *multiHold, error) {
	if ctx == nil {
		return nil, nil, nilContextError(s.kind + "." + op)
	}
	if err := s.check(op); err != nil {
		return nil, nil, err
	}
	if lease < 0 || (lease > 0 && lease < MinLease) {
		return nil, nil, &ArgumentError{Op: s.kind + "." + op, Arg: "lease", Value: lease.String(),
			Reason: "must be at least 1ms, or 0 for the watchdog"}
	}
	if prev := s.holdOf(ctx); prev != nil {
		return nil, prev, nil
	}
	if _, ok := OwnerOf(ctx); ok {
		// The caller's owner. A held context acts only through its own Client: a lock of another Client refuses
		// it (ErrOtherClient) as it would outside the set.
		return ctx, nil, nil
	}
	return WithOwner(ctx, s.mintOwner()), nil, nil
}

// mintOwner returns a new owner id for one acquisition of the set: minted by the Client of its first lock of this
// package ("<that Client's UUID>:<n>", which no other owner has on any server), or, for a set of other Locker
// implementations only, a fresh UUID with owner number 1.
func (s *multiSet) mintOwner() string {
	for _, l := range s.locks {
		if sl, ok := l.(setLock); ok {
			id, _ := sl.client().mintOwnerID()
			return id
		}
	}
	return uuid.NewString() + ":1"
}

// holdCount returns how many acquisitions of the set held's owner has: the hold count that at least quorum of the
// locks reach (for a MultiLock, whose quorum is every lock, the smallest count). A context without an owner holds
// nothing (0, without I/O). Each lock is asked with the set's held context of that lock when held is one, else with
// held (its owner). For a RedLock, a lock whose query failed counts as 0 as long as quorum locks answered; the
// errors are returned, joined, when fewer did.
func (s *multiSet) holdCount(held context.Context, op string) *future.Future[int] {
	if err := s.check(op); err != nil {
		return future.Completed(0, err)
	}
	if held == nil {
		return future.Completed(0, nil)
	}
	if _, ok := OwnerOf(held); !ok {
		return future.Completed(0, nil)
	}
	var comps []context.Context
	if h := s.holdOf(held); h != nil {
		h.mu.Lock()
		comps = slices.Clone(h.comps)
		h.mu.Unlock()
	}
	n := len(s.locks)
	fs := make([]*future.Future[int], n)
	for i, l := range s.locks {
		sl, ok := l.(setLock)
		if !ok {
			return future.Completed(0, &ArgumentError{Op: s.kind + "." + op, Arg: fmt.Sprintf("locks[%d]", i),
				Value: l.Name(), Reason: "is not a lock of this package: it cannot report hold counts"})
		}
		ctx := held
		if comps != nil && comps[i] != nil {
			ctx = comps[i]
		}
		fs[i] = sl.holdCount(ctx, op)
	}
	p := future.NewPromise[int]()
	var mu sync.Mutex // guards counts, errs and left
	counts := make([]int, 0, n)
	var errs []error
	left := n
	for i, f := range fs {
		f.OnComplete(func(c int, err error) {
			mu.Lock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: lock %q: %w", s.kind, s.locks[i].Name(), err))
			} else {
				counts = append(counts, c)
			}
			left--
			last := left == 0
			mu.Unlock()
			if last {
				n, err := s.quorumCount(counts, errs)
				complete(s.log, p, n, err)
			}
		})
	}
	return p.Future()
}

// quorumCount is the count at least quorum locks reach, given the counts of the locks that answered: the
// quorum-th largest (locks that did not answer count as 0); an error when fewer than quorum answered or, for a
// MultiLock, when any failed.
func (s *multiSet) quorumCount(counts []int, errs []error) (int, error) {
	if len(counts) < s.quorum || (s.quorum == len(s.locks) && len(errs) > 0) {
		return 0, errors.Join(errs...)
	}
	slices.Sort(counts)
	return counts[len(counts)-s.quorum], nil
}

// isHeldBy reports whether held's owner holds the set (holdCount > 0).
func (s *multiSet) isHeldBy(held context.Context, op string) *future.Future[bool] {
	return future.Then(s.holdCount(held, op), func(n int, err error) (bool, error) { return n > 0, err })
}

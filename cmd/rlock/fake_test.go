//go:build unix

package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// fakeLocker is an in-process locker for the process-management tests: reentrant locks with owners and hold
// counts, waits that end on release, held contexts the test can cancel as "lost", and injectable errors. It starts
// no goroutine. The end-to-end tests use the real library against redis-server.
type fakeLocker struct {
	mu       sync.Mutex // guards the fields below
	locks    map[string]*fakeLock
	changed  chan struct{} // closed and replaced whenever a lock is freed: wakes waiters
	next     int
	acquires int // successful acquisitions
	releases int // Release calls
	closed   bool

	// Injected failures, read under mu.
	releaseErr error
	statusErr  error
}

type fakeLock struct {
	owner  string
	count  int64
	ttl    time.Duration
	held   context.Context         // the held context, shared by re-entries
	cancel context.CancelCauseFunc // cancels held
}

func newFakeLocker() *fakeLocker {
	return &fakeLocker{locks: map[string]*fakeLock{}, changed: make(chan struct{})}
}

var _ locker = (*fakeLocker)(nil)

// Acquire takes the lock, re-entering it for the same owner, and waits for a release otherwise.
func (f *fakeLocker) Acquire(ctx context.Context, a acquisition) (context.Context, string, error) {
	var deadline <-chan time.Time
	if a.Wait >= 0 {
		t := time.NewTimer(a.Wait)
		defer t.Stop()
		deadline = t.C
	}
	for {
		f.mu.Lock()
		owner := a.Owner
		if owner == "" {
			f.next++
			owner = fmt.Sprintf("fake-uuid:%d", f.next)
		}
		l := f.locks[a.Name]
		if l == nil || l.owner == owner {
			if l == nil {
				held, cancel := context.WithCancelCause(rlock.WithOwner(context.Background(), owner))
				l = &fakeLock{owner: owner, ttl: 30 * time.Second, held: held, cancel: cancel}
				f.locks[a.Name] = l
			}
			l.count++
			f.acquires++
			held := l.held // a re-entry gets the context of the hold, as rlock's does
			f.mu.Unlock()
			return held, owner, nil
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			return nil, "", rlock.ErrNotAcquired
		case <-ctx.Done():
			return nil, "", ctx.Err()
		}
	}
}

// Release releases one hold of the owner held carries.
func (f *fakeLocker) Release(_ context.Context, held context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.releases++
	if f.releaseErr != nil {
		return f.releaseErr
	}
	owner, _ := rlock.OwnerOf(held)
	l := f.locks[name]
	if l == nil || l.owner != owner {
		return rlock.ErrNotHeld
	}
	if l.count--; l.count == 0 {
		f.freeLocked(name, rlock.ErrReleased)
	}
	return nil
}

// WithOwner implements locker.
func (f *fakeLocker) WithOwner(ctx context.Context, owner string) context.Context {
	return rlock.WithOwner(ctx, owner)
}

// Status implements locker.
func (f *fakeLocker) Status(_ context.Context, name string) (lockStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.statusErr != nil {
		return lockStatus{}, f.statusErr
	}
	l := f.locks[name]
	if l == nil {
		return lockStatus{Name: name, Type: "none", TTL: rlock.TTLNoKey}, nil
	}
	return lockStatus{Name: name, Type: "hash", Holders: []holder{{Owner: l.owner, Holds: l.count}}, TTL: l.ttl}, nil
}

// ForceUnlock implements locker.
func (f *fakeLocker) ForceUnlock(_ context.Context, name string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.locks[name] == nil {
		return false, nil
	}
	f.freeLocked(name, rlock.ErrLockLost)
	return true, nil
}

// Close implements locker.
func (f *fakeLocker) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// hold makes owner hold name, as another process would.
func (f *fakeLocker) hold(name, owner string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	held, cancel := context.WithCancelCause(rlock.WithOwner(context.Background(), owner))
	f.locks[name] = &fakeLock{owner: owner, count: 1, ttl: 25 * time.Second, held: held, cancel: cancel}
}

// lose ends name's lock with cause, as a renewal that found it gone (rlock.ErrLockLost) or a lease that ran out
// (rlock.ErrLeaseExpired) would.
func (f *fakeLocker) lose(name string, cause error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.freeLocked(name, cause)
}

func (f *fakeLocker) freeLocked(name string, cause error) {
	if l := f.locks[name]; l != nil {
		l.cancel(cause)
		delete(f.locks, name)
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

// snapshot describes the fake's state for assertions: "name=owner*count" per lock, sorted.
func (f *fakeLocker) snapshot() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var parts []string
	for name, l := range f.locks {
		parts = append(parts, fmt.Sprintf("%s=%s*%d", name, l.owner, l.count))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func (f *fakeLocker) counts() (acquires, releases int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acquires, f.releases
}

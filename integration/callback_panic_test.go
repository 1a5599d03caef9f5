package integration

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// A panic in a caller's callback (on a future the client returned, or in an Observer method) is the caller's bug:
// the client logs it and goes on. It must not cut short the client's own work in the goroutine that ran the
// callback — the release that hands the lock on, the releases queued behind an attempt, a timer's task — so that
// no other caller waits forever and the program does not end.

// panicRig is a client whose log keeps the panics it recovered.
type panicRig struct {
	c      *rlock.Client
	panics *panicLog
	ctx    context.Context
}

func newPanicRig(t *testing.T, obs rlock.Observer) *panicRig {
	t.Helper()
	srv := redistest.Start(t)
	r := &panicRig{panics: &panicLog{}, ctx: ctxT(t, 30*time.Second)}
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: srv.Addr()}, Observer: obs,
		Logger: slog.New(r.panics)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r.c = c
	return r
}

// loggedOnce waits until the client logged exactly one recovered panic, naming want.
func (r *panicRig) loggedOnce(t *testing.T, want string) {
	t.Helper()
	eventually(t, 5*time.Second, "the panic to be logged", func() bool { return len(r.panics.logged()) > 0 })
	if p := r.panics.logged(); len(p) != 1 || !strings.Contains(p[0], want) || !strings.Contains(p[0], "user bug") {
		t.Fatalf("panics logged: %q; want one naming %q", p, want)
	}
}

// within runs fn and fails the test if it does not return within await's bound: a call left waiting for good by a
// cut-short hand-over or release would block the test until the package's timeout.
func within(t *testing.T, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	if err := await(t, what, done); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// lockAndUnlock takes l with ctx and releases it: the lock is free and the client serves it.
func lockAndUnlock(l *rlock.Lock, ctx context.Context) func() error {
	return func() error {
		held, err := l.Lock(ctx)
		if err != nil {
			return err
		}
		return l.Unlock(held)
	}
}

// The lock is handed to a waiter of the same client by the holder's release, and the waiter's callback panics:
// the holder's Unlock still returns, and the waiter holds the lock.
func TestPanickingCallbackOfAHandedOverLockLeavesTheReleaserFree(t *testing.T) {
	r := newPanicRig(t, nil)
	l := r.c.Lock("p")
	first := mustLock(t, l, r.ctx)
	granted := make(chan context.Context, 1)
	l.LockAsync(r.ctx).OnComplete(func(held context.Context, err error) {
		granted <- held
		panic("user bug")
	})
	eventually(t, 5*time.Second, "the second call to wait", func() bool { return r.c.Stats().Waiters == 1 })
	within(t, "the holder's Unlock", func() error { return l.Unlock(first) })
	second := <-granted
	if second == nil || second.Err() != nil {
		t.Fatalf("the waiter's held context = %v, want a live one", second)
	}
	r.loggedOnce(t, "a callback of a future")
	within(t, "the waiter's Unlock", func() error { return l.Unlock(second) })
	within(t, "a later Lock and Unlock", lockAndUnlock(l, r.ctx))
}

// A re-entry's callback panics: the releases of the owner, which wait for its attempts in flight, still go.
func TestPanickingCallbackOfAReentryLeavesItsOwnersReleasesFree(t *testing.T) {
	r := newPanicRig(t, nil)
	l := r.c.Lock("p")
	held := mustLock(t, l, r.ctx)
	done := make(chan error, 1)
	l.LockAsync(held).OnComplete(func(_ context.Context, err error) {
		done <- err
		panic("user bug")
	})
	if err := <-done; err != nil {
		t.Fatalf("re-entry: %v", err)
	}
	r.loggedOnce(t, "a callback of a future")
	within(t, "the first Unlock", func() error { return l.Unlock(held) })
	within(t, "the second Unlock", func() error { return l.Unlock(held) })
	if held.Err() == nil {
		t.Fatal("the held context is live after both Unlocks")
	}
	within(t, "a later Lock and Unlock", lockAndUnlock(l, r.ctx))
}

// A wait runs out and the call's callback panics: the client logs it and goes on (a later wait runs out too, and
// the holder still holds the lock).
func TestPanickingCallbackOfAWaitThatRanOutIsLogged(t *testing.T) {
	r := newPanicRig(t, nil)
	l := r.c.Lock("p")
	held := mustLock(t, l, r.ctx)
	done := make(chan error, 1)
	l.TryLockAsync(r.ctx, 200*time.Millisecond, 0).OnComplete(func(_ context.Context, err error) {
		done <- err
		panic("user bug")
	})
	if err := <-done; err == nil {
		t.Fatal("TryLock of a held lock succeeded")
	}
	r.loggedOnce(t, "a callback of a future")
	if _, err := l.TryLock(r.ctx, 20*time.Millisecond, 0); err == nil {
		t.Fatal("a later TryLock of the held lock succeeded")
	}
	mustUnlock(t, l, held)
}

// panickingObserver panics when it hears that a lock was taken, but for the first time.
type panickingObserver struct {
	rlock.NopObserver
	acquired *atomic.Int32
}

func (o panickingObserver) Acquired(rlock.AcquiredEvent) {
	if o.acquired.Add(1) > 1 {
		panic("user bug")
	}
}

// The Observer panics when the lock passes to a waiter, by hand-over in the releaser's Unlock (or, when the
// waiter's own attempt was in flight at the release, by that attempt): as with a callback, the releaser's Unlock
// returns and the waiter holds the lock.
func TestPanickingObserverLeavesTheHandOverWhole(t *testing.T) {
	r := newPanicRig(t, panickingObserver{acquired: new(atomic.Int32)})
	l := r.c.Lock("p")
	first := mustLock(t, l, r.ctx)
	granted := make(chan error, 1)
	var second context.Context
	go func() {
		held, err := l.Lock(r.ctx)
		second = held
		granted <- err
	}()
	eventually(t, 5*time.Second, "the second call to wait", func() bool { return r.c.Stats().Waiters == 1 })
	within(t, "the holder's Unlock", func() error { return l.Unlock(first) })
	within(t, "the waiter's Lock", func() error { return <-granted })
	r.loggedOnce(t, "the Observer's Acquired")
	within(t, "the waiter's Unlock", func() error { return l.Unlock(second) })
}

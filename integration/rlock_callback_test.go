package integration

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/rlock"
)

// A blocking call made inside a future callback or an Observer method fails at once with ErrInCallback and sends
// nothing; it never hangs. (Before, LockAsync(ctx).OnComplete(func(held, err) { l.Unlock(held) }) hung until
// Close: the Unlock waited for a reply that the event loop it blocked would have read.)

// await returns what ch delivers, failing the test when nothing comes within 10 s (the call hung).
func await[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no result within 10 s: the call hung", what)
		var zero T
		return zero
	}
}

func TestBlockingCallInsideFutureCallbackFailsAtOnce(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 20*time.Second)
	l := c.Lock("cb")

	// Completed on the transport's goroutine: the lock is held by another owner first, so the grant comes from a
	// reply read after the holder's release.
	blocker := mustLock(t, l, ctx)
	type res struct {
		held context.Context
		err  error
	}
	got := make(chan res, 1)
	l.LockAsync(ctx).OnComplete(func(held context.Context, err error) {
		if err != nil {
			got <- res{nil, err}
			return
		}
		got <- res{held, l.Unlock(held)} // blocking: refused
	})
	subscribed(t, srv, "redisson_lock__channel:{cb}")
	mustUnlock(t, l, blocker)
	r := await(t, "Unlock inside OnComplete", got)
	if !errors.Is(r.err, rlock.ErrInCallback) || !errors.Is(r.err, future.ErrInCallback) {
		t.Fatalf("Unlock inside a callback: %v, want ErrInCallback", r.err)
	}
	// Nothing was sent: the lock is still held by the callback's owner, and the Async form works in a callback.
	if ok, err := l.IsHeldBy(r.held); err != nil || !ok {
		t.Fatalf("after the refused Unlock: IsHeldBy = %v, %v; want held", ok, err)
	}
	released := make(chan error, 1)
	future.Completed(r.held, nil).OnComplete(func(held context.Context, _ error) {
		l.UnlockAsync(held).OnComplete(func(_ struct{}, err error) { released <- err })
	})
	if err := await(t, "UnlockAsync inside OnComplete", released); err != nil {
		t.Fatal(err)
	}
	if n, _ := srv.DoInt(ctx, "EXISTS", "cb"); n != 0 {
		t.Fatal("the lock is still held after UnlockAsync")
	}

	// Completed on the timer's worker: a TryLock whose wait runs out. Every blocking call is refused in it.
	blocker = mustLock(t, l, ctx)
	errs := make(chan map[string]error, 1)
	l.TryLockAsync(ctx, 50*time.Millisecond, 0).OnComplete(func(_ context.Context, err error) {
		m := map[string]error{"TryLockAsync": err}
		_, m["Lock"] = c.Lock("cb-other").Lock(ctx)
		_, m["IsLocked"] = l.IsLocked(ctx)
		_, m["ForceUnlock"] = l.ForceUnlock(ctx)
		m["Semaphore.Release"] = c.Semaphore("cb-sem").Release(ctx, 1)
		_, m["future.Get"] = future.NewPromise[int]().Future().Get(ctx)
		m["Client.Close"] = c.Close() // would wait for the goroutine it runs on
		errs <- m
	})
	m := await(t, "blocking calls inside a callback on the timer's worker", errs)
	if !errors.Is(m["TryLockAsync"], rlock.ErrNotAcquired) {
		t.Fatalf("TryLockAsync: %v, want ErrNotAcquired", m["TryLockAsync"])
	}
	delete(m, "TryLockAsync")
	for name, err := range m {
		if !errors.Is(err, rlock.ErrInCallback) {
			t.Errorf("%s inside a callback: %v, want ErrInCallback", name, err)
		}
	}
	for _, key := range []string{"cb-other", "cb-sem"} {
		if n, _ := srv.DoInt(ctx, "EXISTS", key); n != 0 {
			t.Errorf("a refused call inside a callback wrote %s", key)
		}
	}
	if ok, _ := l.IsLocked(ctx); !ok {
		t.Error("the refused ForceUnlock deleted the lock")
	}

	// Registered on a future already complete, the callback runs at once on the caller's goroutine: the same rule
	// holds there, so a program does not depend on which goroutine won the race.
	var inline error
	future.Completed[context.Context](nil, nil).OnComplete(func(context.Context, error) { _, inline = l.Lock(ctx) })
	if !errors.Is(inline, rlock.ErrInCallback) {
		t.Fatalf("Lock inside a callback run at registration: %v, want ErrInCallback", inline)
	}
	mustUnlock(t, l, blocker)
}

// Every blocking query of every lock kind, made inside a callback, fails with ErrInCallback and sends nothing — also
// when its reply would have come at once, which made the answer depend on a race while a query sent its command
// before its wait checked for a callback.
func TestEveryBlockingQueryInsideACallbackSendsNothing(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 20*time.Second)
	l, fair, fenced, rw := c.Lock("q"), c.FairLock("q-fair"), c.FencedLock("q-fenced"), c.ReadWriteLock("q-rw")
	multi, red := rlock.NewMultiLock(c.Lock("q-m1"), c.Lock("q-m2")), rlock.NewRedLock(c.Lock("q-r1"))
	held := mustLock(t, l, ctx)
	defer mustUnlock(t, l, held)
	queries := map[string]func() error{
		"Lock.IsLocked":                  func() error { _, err := l.IsLocked(ctx); return err },
		"Lock.IsHeldBy":                  func() error { _, err := l.IsHeldBy(held); return err },
		"Lock.HoldCount":                 func() error { _, err := l.HoldCount(held); return err },
		"Lock.RemainTimeToLive":          func() error { _, err := l.RemainTimeToLive(ctx); return err },
		"Lock.Status":                    func() error { _, err := l.Status(ctx); return err },
		"FairLock.IsLocked":              func() error { _, err := fair.IsLocked(ctx); return err },
		"FairLock.IsHeldBy":              func() error { _, err := fair.IsHeldBy(held); return err },
		"FairLock.HoldCount":             func() error { _, err := fair.HoldCount(held); return err },
		"FairLock.QueueLength":           func() error { _, err := fair.QueueLength(ctx); return err },
		"FairLock.RemainTimeToLive":      func() error { _, err := fair.RemainTimeToLive(ctx); return err },
		"FencedLock.Token":               func() error { _, err := fenced.Token(ctx); return err },
		"FencedLock.IsLocked":            func() error { _, err := fenced.IsLocked(ctx); return err },
		"FencedLock.IsHeldBy":            func() error { _, err := fenced.IsHeldBy(held); return err },
		"FencedLock.HoldCount":           func() error { _, err := fenced.HoldCount(held); return err },
		"FencedLock.RemainTimeToLive":    func() error { _, err := fenced.RemainTimeToLive(ctx); return err },
		"ReadWriteLock.Mode":             func() error { _, err := rw.Mode(ctx); return err },
		"ReadWriteLock.RemainTimeToLive": func() error { _, err := rw.RemainTimeToLive(ctx); return err },
		"ReadWriteLock.Status":           func() error { _, err := rw.Status(ctx); return err },
		"ReadLock.IsLocked":              func() error { _, err := rw.ReadLock().IsLocked(ctx); return err },
		"ReadLock.HoldCount":             func() error { _, err := rw.ReadLock().HoldCount(held); return err },
		"ReadLock.RemainTimeToLive":      func() error { _, err := rw.ReadLock().RemainTimeToLive(ctx); return err },
		"WriteLock.IsLocked":             func() error { _, err := rw.WriteLock().IsLocked(ctx); return err },
		"WriteLock.HoldCount":            func() error { _, err := rw.WriteLock().HoldCount(held); return err },
		"MultiLock.IsHeldBy":             func() error { _, err := multi.IsHeldBy(held); return err },
		"MultiLock.HoldCount":            func() error { _, err := multi.HoldCount(held); return err },
		"RedLock.IsHeldBy":               func() error { _, err := red.IsHeldBy(held); return err },
		"RedLock.HoldCount":              func() error { _, err := red.HoldCount(held); return err },
	}
	before := commandCounts(t, srv)
	errs := map[string]error{}
	// A callback registered on a completed future runs at once, on this goroutine, as a callback.
	future.Completed(0, nil).OnComplete(func(int, error) {
		for name, q := range queries {
			errs[name] = q()
		}
	})
	for name, err := range errs {
		if !errors.Is(err, rlock.ErrInCallback) {
			t.Errorf("%s inside a callback: %v, want ErrInCallback", name, err)
		}
	}
	if len(errs) != len(queries) {
		t.Fatalf("the callback ran %d of %d queries", len(errs), len(queries))
	}
	if sent := commandsSince(before, commandCounts(t, srv)); sent != "" {
		t.Errorf("the refused queries sent commands, want none: %s", sent)
	}
}

// An Observer method runs as a callback: a blocking call in it fails at once; the call that reported the event
// completes normally.
func TestBlockingCallInsideObserverFailsAtOnce(t *testing.T) {
	srv := startServer(t)
	ctx := ctxT(t, 20*time.Second)
	var mu sync.Mutex
	var fromObserver []error
	var c *rlock.Client
	obs := observerFunc{acquired: func(e rlock.AcquiredEvent) {
		_, err := c.Lock(e.Name).IsLocked(ctx) // a blocking query: refused
		mu.Lock()
		fromObserver = append(fromObserver, err)
		mu.Unlock()
	}}
	var err error
	c, err = rlock.NewClient(lockConfig(srv, rlock.Config{Observer: obs}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l := c.Lock("obs")

	done := make(chan error, 1)
	go func() { // owner: this test; returns when Lock and Unlock have
		held, err := l.Lock(ctx)
		if err == nil {
			err = l.Unlock(held)
		}
		done <- err
	}()
	if err := await(t, "Lock with an Observer that blocks", done); err != nil {
		t.Fatal(err)
	}
	// The same from an asynchronous acquire, whose event is reported on the transport's goroutine.
	held, err := l.LockAsync(ctx).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustUnlock(t, l, held)
	mu.Lock()
	defer mu.Unlock()
	if len(fromObserver) != 2 {
		t.Fatalf("Acquired called %d times, want 2", len(fromObserver))
	}
	for i, err := range fromObserver {
		if !errors.Is(err, rlock.ErrInCallback) {
			t.Errorf("blocking call in Acquired #%d: %v, want ErrInCallback", i, err)
		}
	}
}

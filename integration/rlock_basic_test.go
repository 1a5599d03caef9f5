package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// Ports of Redisson's RedissonLockTest scenarios: the basic contract of a reentrant lock.

func TestLockUnlock(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	l := c.Lock("lock")
	ctx := ctxT(t, 10*time.Second)

	held := mustLock(t, l, ctx)
	owner, ok := rlock.OwnerOf(held)
	if !ok {
		t.Fatal("held context carries no owner")
	}
	if m := hgetall(t, srv, "lock"); len(m) != 1 || m[owner] != "1" {
		t.Fatalf("HGETALL lock = %v, want {%s: 1}", m, owner)
	}
	if held.Err() != nil {
		t.Fatalf("held context already done: %v", context.Cause(held))
	}
	if locked, err := l.IsLocked(ctx); err != nil || !locked {
		t.Fatalf("IsLocked = %v, %v", locked, err)
	}
	mustUnlock(t, l, held)
	if locked, err := l.IsLocked(ctx); err != nil || locked {
		t.Fatalf("IsLocked after unlock = %v, %v", locked, err)
	}
	if !errors.Is(context.Cause(held), rlock.ErrReleased) {
		t.Fatalf("cause after unlock = %v, want ErrReleased", context.Cause(held))
	}
	if st := c.Stats(); !idle(st) {
		t.Fatalf("stats after unlock = %+v, want zero", st)
	}
}

// Redisson's testGetHoldCount: 0, 1, 0, 2, 1, 0.
func TestReentrancyHoldCount(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	l := c.Lock("lock")
	ctx := rlock.WithOwner(ctxT(t, 10*time.Second), "1")

	wantHolds := func(want int) {
		t.Helper()
		n, err := l.HoldCount(ctx)
		if err != nil || n != want {
			t.Fatalf("HoldCount = %d, %v; want %d", n, err, want)
		}
	}
	wantHolds(0)
	held := mustLock(t, l, ctx)
	wantHolds(1)
	mustUnlock(t, l, held)
	wantHolds(0)

	held = mustLock(t, l, ctx)
	again := mustLock(t, l, held) // re-entry with the held context
	if again != held {
		t.Fatal("re-entry returned another context than the hold's")
	}
	wantHolds(2)
	if n, _ := l.HoldCount(held); n != 2 {
		t.Fatalf("HoldCount(held) = %d, want 2", n)
	}
	mustUnlock(t, l, again)
	wantHolds(1)
	if held.Err() != nil {
		t.Fatalf("held context cancelled by a partial unlock: %v", context.Cause(held))
	}
	if st := c.Stats(); st.Held != 1 {
		t.Fatalf("stats = %+v, want one held lock", st)
	}
	mustUnlock(t, l, held)
	wantHolds(0)
	if !errors.Is(context.Cause(held), rlock.ErrReleased) {
		t.Fatalf("cause = %v, want ErrReleased", context.Cause(held))
	}
}

// Redisson's testIsLocked / testIsHeldByCurrentThread / testIsHeldByThread, with owners in place of threads.
func TestIsLockedAndIsHeldBy(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	other := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	l := c.Lock("lock")

	if held, err := l.IsHeldBy(ctx); err != nil || held {
		t.Fatalf("IsHeldBy(no owner) = %v, %v", held, err)
	}
	held := mustLock(t, l, ctx)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"holder", held, true},
		{"holder pinned by id", rlock.WithOwner(ctx, mustOwner(t, held)), true},
		{"another owner of the same client", rlock.WithOwner(ctx, "999"), false},
		{"no owner", ctx, false},
	} {
		if got, err := l.IsHeldBy(tc.ctx); err != nil || got != tc.want {
			t.Errorf("%s: IsHeldBy = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	ol := other.Lock("lock")
	if got, err := ol.IsLocked(ctx); err != nil || !got {
		t.Fatalf("IsLocked from another client = %v, %v", got, err)
	}
	if got, err := ol.IsHeldBy(rlock.WithOwner(ctx, "1")); err != nil || got {
		t.Fatalf("IsHeldBy(other client's owner 1) = %v, %v", got, err)
	}
	// A held context acts only through its own Client; the owner it carries, pinned, can be asked anywhere.
	if got, err := ol.IsHeldBy(held); !errors.Is(err, rlock.ErrOtherClient) {
		t.Fatalf("IsHeldBy(held) through another client = %v, %v; want ErrOtherClient", got, err)
	}
	if got, err := ol.IsHeldBy(rlock.WithOwner(ctx, mustOwner(t, held))); err != nil || !got {
		t.Fatalf("IsHeldBy(held's owner, pinned) through another client = %v, %v", got, err)
	}
	mustUnlock(t, l, held)
	if got, err := l.IsHeldBy(held); err != nil || got {
		t.Fatalf("IsHeldBy after unlock = %v, %v", got, err)
	}
}

// Redisson's testUnlockFail: unlocking as another owner fails and changes nothing.
func TestUnlockByAnotherOwnerFails(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	other := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	l := c.Lock("lock")
	held := mustLock(t, l, ctx)

	for name, try := range map[string]func() error{
		"same client, other owner": func() error { return l.Unlock(rlock.WithOwner(ctx, "12345")) },
		"other client, new owner":  func() error { return other.Lock("lock").Unlock(rlock.WithOwner(ctx, "1")) },
		"no owner":                 func() error { return l.Unlock(ctx) },
	} {
		if err := try(); !errors.Is(err, rlock.ErrNotHeld) {
			t.Errorf("%s: Unlock = %v, want ErrNotHeld", name, err)
		}
	}
	if got, err := l.IsHeldBy(held); err != nil || !got {
		t.Fatalf("lock no longer held after failed unlocks: %v, %v", got, err)
	}
	if held.Err() != nil {
		t.Fatalf("held context cancelled: %v", context.Cause(held))
	}
	mustUnlock(t, l, held)
	if err := l.Unlock(held); !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("second Unlock = %v, want ErrNotHeld", err)
	}
}

// Redisson's testForceUnlock: a fresh handle (and another client) deletes the lock whoever holds it.
func TestForceUnlockFromFreshHandle(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	other := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)

	held := mustLock(t, c.Lock("lock"), ctx)
	mustLock(t, c.Lock("lock"), held) // hold count 2: force unlock ignores it
	ok, err := c.Lock("lock").ForceUnlock(ctx)
	if err != nil || !ok {
		t.Fatalf("ForceUnlock = %v, %v; want true", ok, err)
	}
	if locked, _ := c.Lock("lock").IsLocked(ctx); locked {
		t.Fatal("still locked after ForceUnlock")
	}
	if !errors.Is(context.Cause(held), rlock.ErrLockLost) {
		t.Fatalf("holder's cause = %v, want ErrLockLost", context.Cause(held))
	}
	if ok, err := c.Lock("lock").ForceUnlock(ctx); err != nil || ok {
		t.Fatalf("ForceUnlock of a free lock = %v, %v; want false", ok, err)
	}

	// From another client: the holder learns it at its next renewal.
	held = mustLock(t, c.Lock("lock2"), ctx)
	if ok, err := other.Lock("lock2").ForceUnlock(ctx); err != nil || !ok {
		t.Fatalf("ForceUnlock from another client = %v, %v", ok, err)
	}
	if err := c.Lock("lock2").Unlock(held); !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("Unlock after a remote ForceUnlock = %v, want ErrNotHeld", err)
	}
	if !errors.Is(context.Cause(held), rlock.ErrLockLost) {
		t.Fatalf("cause after the failed unlock = %v, want ErrLockLost", context.Cause(held))
	}
}

// Redisson's testRemainTimeToLive: ≈ lease, -2 after unlock, ≈ watchdog timeout with the watchdog; and
// testReentrantLeaseTime: a partial unlock re-arms the lease.
func TestRemainTimeToLive(t *testing.T) {
	srv := startServer(t)
	const watchdog = 5 * time.Second
	c := newLockClient(t, srv, watchdog)
	ctx := ctxT(t, 10*time.Second)
	l := c.Lock("lock")

	near := func(want time.Duration) {
		t.Helper()
		ttl, err := l.RemainTimeToLive(ctx)
		if err != nil || ttl > want || ttl < want-500*time.Millisecond {
			t.Fatalf("RemainTimeToLive = %v, %v; want about %v", ttl, err, want)
		}
	}
	if ttl, err := l.RemainTimeToLive(ctx); err != nil || ttl != rlock.TTLNoKey {
		t.Fatalf("RemainTimeToLive of a free lock = %v, %v; want TTLNoKey", ttl, err)
	}
	held, err := l.LockLease(ctx, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	near(3 * time.Second)
	mustUnlock(t, l, held)
	if ttl, err := l.RemainTimeToLive(ctx); err != nil || ttl != rlock.TTLNoKey {
		t.Fatalf("RemainTimeToLive after unlock = %v, %v; want TTLNoKey (-2)", ttl, err)
	}

	held = mustLock(t, l, ctx)
	near(watchdog)
	mustUnlock(t, l, held)

	// Re-entrant lease: the partial unlock re-arms the lease, the lock stays held.
	held, err = l.LockLease(ctx, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.LockLease(held, 4*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "PEXPIRE", "lock", "1500"); err != nil {
		t.Fatal(err)
	}
	mustUnlock(t, l, held)
	near(4 * time.Second)
	if held.Err() != nil {
		t.Fatalf("partial unlock cancelled the held context: %v", context.Cause(held))
	}
	mustUnlock(t, l, held)
}

func TestInvalidArgumentsSendNothing(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	l := c.Lock("lock")
	before := commandCounts(t, srv)
	for name, err := range map[string]error{
		"empty name":       func() error { _, err := c.Lock("").Lock(ctx); return err }(),
		"negative lease":   func() error { _, err := l.TryLock(ctx, 0, -time.Second); return err }(),
		"sub-ms lease":     func() error { _, err := l.LockLease(ctx, 500*time.Microsecond); return err }(),
		"zero lease":       func() error { _, err := l.LockLease(ctx, 0); return err }(),
		"negative wait":    func() error { _, err := l.TryLock(ctx, -time.Millisecond, 0); return err }(),
		"bad owner":        func() error { _, err := l.Lock(rlock.WithOwner(ctx, "abc")); return err }(),
		"bad owner suffix": func() error { _, err := l.Lock(rlock.WithOwner(ctx, "uuid:")); return err }(),
		"unlock bad owner": l.Unlock(rlock.WithOwner(ctx, "x:y")),
		"empty name query": func() error { _, err := c.Lock("").IsLocked(ctx); return err }(),
	} {
		var ae *rlock.ArgumentError
		if !errors.Is(err, rlock.ErrInvalidArgument) || !errors.As(err, &ae) {
			t.Errorf("%s: err = %v, want an *ArgumentError", name, err)
		}
	}
	if sent := commandsSince(before, commandCounts(t, srv)); sent != "" {
		t.Fatalf("bad input sent commands: %s", sent)
	}
}

// TryLock's failure to acquire and a context that ends are different errors.
func TestContextEndIsNotFailureToAcquire(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	l := c.Lock("lock")
	held := mustLock(t, l, rlock.WithOwner(ctx, "1"))

	if _, err := l.TryLock(ctx, 0, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryLock(no wait) on a held lock = %v, want ErrNotAcquired", err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := l.TryLock(short, time.Hour, 0); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryLock with an expiring context = %v, want context.DeadlineExceeded", err)
	}
	cancelled, cancel2 := context.WithCancel(ctx)
	f := l.LockAsync(cancelled)
	cancel2()
	if _, err := f.Get(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("LockAsync after cancel = %v, want context.Canceled", err)
	}
	mustUnlock(t, l, held)
	// The last waiter may be abandoned after its attempt queued it on the server and before its departure ran
	// there: the release then grants it the lock, and the client gives that grant back after the Unlock returned.
	eventuallyShowing(t, 5*time.Second, "the abandoned waiters to leave", func() bool { return idle(c.Stats()) },
		func() string { return fmt.Sprintf("stats %+v", c.Stats()) })
}

func TestNewClientFromURL(t *testing.T) {
	srv := redistest.Start(t, redistest.WithPassword("s3cret"))
	c, err := rlock.NewClientFromURL(srv.URL())
	if err != nil {
		t.Fatalf("NewClientFromURL(%s): %v", srv.URL(), err)
	}
	defer c.Close()
	ctx := ctxT(t, 10*time.Second)
	held := mustLock(t, c.Lock("lock"), ctx)
	mustUnlock(t, c.Lock("lock"), held)
	if _, err := rlock.NewClientFromURL(srv.URL() + "?no_such_option=1"); err == nil {
		t.Fatal("an unknown URL option was accepted")
	}
}

// Close fails waiters with ErrClosed, cancels held contexts with ErrClosed, and every later call returns
// ErrClosed; goleak (TestMain) checks that nothing is left running.
func TestCloseFailsWaitersAndLaterCalls(t *testing.T) {
	srv := startServer(t)
	holder := newLockClient(t, srv, 0)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	held := mustLock(t, holder.Lock("lock"), ctx)
	mine := mustLock(t, c.Lock("mine"), ctx)

	f := c.Lock("lock").LockAsync(ctx)
	eventually(t, 2*time.Second, "the acquire to wait", func() bool { return c.Stats().Waiters == 1 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get(ctx); !errors.Is(err, rlock.ErrClosed) {
		t.Fatalf("waiter after Close: %v, want ErrClosed", err)
	}
	if !errors.Is(context.Cause(mine), rlock.ErrClosed) {
		t.Fatalf("held context after Close: %v, want ErrClosed", context.Cause(mine))
	}
	if _, err := c.Lock("other").Lock(ctx); !errors.Is(err, rlock.ErrClosed) {
		t.Fatalf("Lock after Close: %v", err)
	}
	if err := c.Lock("mine").Unlock(mine); !errors.Is(err, rlock.ErrClosed) {
		t.Fatalf("Unlock after Close: %v", err)
	}
	if _, err := c.Lock("mine").IsLocked(ctx); !errors.Is(err, rlock.ErrClosed) {
		t.Fatalf("IsLocked after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Close does not release: the lock stays until its lease ends.
	if n, _ := srv.DoInt(ctx, "EXISTS", "mine"); n != 1 {
		t.Fatal("Close released a held lock")
	}
	mustUnlock(t, holder.Lock("lock"), held)
}

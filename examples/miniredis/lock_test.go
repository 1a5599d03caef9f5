package miniredis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/rlock"
)

// newClient starts an in-process miniredis and an rlock client on it; both are closed when the test ends.
func newClient(t *testing.T) (*rlock.Client, *miniredis.Miniredis) {
	t.Helper()
	srv := miniredis.RunT(t)
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, srv
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Lock, TryLock and Unlock behave as on Redis: a second owner is refused while the lock is held and gets it once
// it is released, and a release leaves no key behind.
func TestLockTryLockUnlock(t *testing.T) {
	c, srv := newClient(t)
	ctx := testCtx(t)
	l := c.Lock("orders:42")

	held, err := l.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if !srv.Exists("orders:42") {
		t.Fatal("no lock key in miniredis after Lock")
	}
	if _, err := l.TryLock(ctx, 50*time.Millisecond, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryLock by another owner while held = %v; want ErrNotAcquired", err)
	}
	if err := l.Unlock(held); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	again, err := l.TryLock(ctx, 0, 0)
	if err != nil {
		t.Fatalf("TryLock after Unlock: %v", err)
	}
	if err := l.Unlock(again); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if keys := srv.Keys(); len(keys) != 0 {
		t.Fatalf("keys left after the last Unlock: %v", keys)
	}
}

// A waiter that gave up is gone from the lock's queue on the server by the time its caller learns it: miniredis
// serves each connection on a goroutine of its own, so a command sent after the failure on another connection of
// the pool (the Unlock, the TryLock) would otherwise often run before the departure, and the release would grant
// the lock to the departed waiter for a round trip. Run 300 times: it failed about once in a hundred rounds when
// the failure came before the server's answer.
func TestGaveUpWaiterIsGoneWhenItsCallerLearns(t *testing.T) {
	c, _ := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := c.Lock("orders:43")
	for round := range 300 {
		held, err := l.Lock(ctx)
		if err != nil {
			t.Fatalf("round %d: Lock: %v", round, err)
		}
		if _, err := l.TryLock(ctx, 3*time.Millisecond, 0); !errors.Is(err, rlock.ErrNotAcquired) {
			t.Fatalf("round %d: TryLock by another owner while held = %v; want ErrNotAcquired", round, err)
		}
		if err := l.Unlock(held); err != nil {
			t.Fatalf("round %d: Unlock: %v", round, err)
		}
		again, err := l.TryLock(ctx, 0, 0)
		if err != nil {
			t.Fatalf("round %d: TryLock of the free lock, after the waiter gave up: %v", round, err)
		}
		if err := l.Unlock(again); err != nil {
			t.Fatalf("round %d: Unlock: %v", round, err)
		}
	}
}

// A waiting Lock is woken by the release (miniredis delivers the unlock message over PUBLISH/SUBSCRIBE).
func TestWaiterIsWokenByUnlock(t *testing.T) {
	c, _ := newClient(t)
	ctx := testCtx(t)
	l := c.Lock("orders:42")
	held, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiter := l.LockAsync(ctx) // another owner: queued behind the holder
	if waiter.IsDone() {
		t.Fatal("the waiter got the lock while it was held")
	}
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	next, err := waiter.Get(ctx)
	if err != nil {
		t.Fatalf("waiter after Unlock: %v", err)
	}
	if err := l.Unlock(next); err != nil {
		t.Fatal(err)
	}
}

// miniredis's keys expire only when the test moves its clock: a lock whose holder stopped renewing it ends once the
// test forwards past the lease.
func TestLeaseEndsWhenTheClockIsForwarded(t *testing.T) {
	c, srv := newClient(t)
	ctx := testCtx(t)
	l := c.Lock("orders:42")
	if _, err := l.LockLease(ctx, time.Second); err != nil { // a fixed lease: no watchdog renews it
		t.Fatal(err)
	}
	srv.FastForward(2 * time.Second)
	held, err := l.TryLock(ctx, 0, 0)
	if err != nil {
		t.Fatalf("TryLock after the lease ended: %v", err)
	}
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
}

// RateLimiter's scripts need Lua's struct library, which miniredis does not have: the README says so, and this
// test notices if a miniredis upgrade changes it.
func TestRateLimiterNeedsARealServer(t *testing.T) {
	c, _ := newClient(t)
	ctx := testCtx(t)
	r := c.RateLimiter("api-calls")
	if _, err := r.TrySetRate(ctx, rlock.RateConfig{Type: rlock.RateOverall, Rate: 2, Interval: time.Second}); err != nil {
		t.Fatalf("TrySetRate: %v", err)
	}
	_, err := r.TryAcquire(ctx, 1, 0)
	if err == nil || !strings.Contains(err.Error(), "struct") {
		t.Fatalf("TryAcquire on miniredis = %v; want the script error about Lua's struct library (if miniredis "+
			"runs it now, update the README and this package's doc)", err)
	}
}

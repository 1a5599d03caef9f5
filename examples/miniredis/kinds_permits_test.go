package miniredis_test

import (
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// The permit kinds the README says work on miniredis — the semaphores, CountDownLatch and FixedWindowLimiter —
// each granted, refused, and letting a waiter through once what it waits for comes back.

func TestSemaphore(t *testing.T) {
	c, srv := newClient(t)
	ctx := testCtx(t)
	s := c.Semaphore("sem")
	if ok, err := s.TrySetPermits(ctx, 1); !ok || err != nil {
		t.Fatalf("TrySetPermits: %v, %v", ok, err)
	}

	if ok, err := s.TryAcquire(ctx, 1, 0); !ok || err != nil {
		t.Fatalf("TryAcquire of the only permit = %v, %v; want granted", ok, err)
	}
	if ok, err := s.TryAcquire(ctx, 1, 0); ok || err != nil {
		t.Fatalf("TryAcquire with no permit left = %v, %v; want refused", ok, err)
	}
	waiter := s.AcquireAsync(ctx, 1)
	subscribed(t, srv, "redisson_sc:{sem}")
	stillWaiting(t, "the semaphore's waiter", waiter)
	if err := s.Release(ctx, 1); err != nil {
		t.Fatalf("Release: %v", err)
	}
	woken(t, "the semaphore's waiter", waiter)
	if n, err := s.AvailablePermits(ctx); err != nil || n != 0 {
		t.Fatalf("AvailablePermits after the waiter took the released permit = %d, %v; want 0", n, err)
	}
}

func TestPermitExpirableSemaphore(t *testing.T) {
	c, srv := newClient(t)
	ctx := testCtx(t)
	s := c.PermitExpirableSemaphore("pes")
	if ok, err := s.TrySetPermits(ctx, 1); !ok || err != nil {
		t.Fatalf("TrySetPermits: %v, %v", ok, err)
	}

	id, err := s.TryAcquire(ctx, 0, time.Minute)
	if err != nil {
		t.Fatalf("TryAcquire of the only permit: %v", err)
	}
	if _, err := s.TryAcquire(ctx, 0, time.Minute); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire with no permit left = %v; want ErrNotAcquired", err)
	}
	waiter := s.AcquireAsync(ctx, 1, time.Minute)
	subscribed(t, srv, "redisson_sc:{pes}")
	stillWaiting(t, "the permit semaphore's waiter", waiter)
	if err := s.Release(ctx, id); err != nil {
		t.Fatalf("Release: %v", err)
	}
	ids := woken(t, "the permit semaphore's waiter", waiter)
	if len(ids) != 1 || ids[0] == id {
		t.Fatalf("the waiter got permits %v, want one new id", ids)
	}
	if err := s.Release(ctx, ids...); err != nil {
		t.Fatalf("the waiter's Release: %v", err)
	}
}

func TestCountDownLatch(t *testing.T) {
	c, srv := newClient(t)
	ctx := testCtx(t)
	l := c.CountDownLatch("latch")
	if ok, err := l.TrySetCount(ctx, 2); !ok || err != nil {
		t.Fatalf("TrySetCount: %v, %v", ok, err)
	}

	// Refused: the latch is closed while its count is above zero.
	if open, err := l.AwaitTimeout(ctx, 0); open || err != nil {
		t.Fatalf("AwaitTimeout on a closed latch = %v, %v; want false", open, err)
	}
	waiter := l.AwaitAsync(ctx)
	subscribed(t, srv, "redisson_countdownlatch__channel__{latch}")
	if n, err := l.CountDown(ctx); n != 1 || err != nil {
		t.Fatalf("first CountDown = %d, %v; want 1 left", n, err)
	}
	stillWaiting(t, "the latch's awaiter", waiter)
	if n, err := l.CountDown(ctx); n != 0 || err != nil {
		t.Fatalf("second CountDown = %d, %v; want 0", n, err)
	}
	woken(t, "the latch's awaiter", waiter)
	// Granted: an open latch lets every awaiter through at once.
	if open, err := l.AwaitTimeout(ctx, 0); !open || err != nil {
		t.Fatalf("AwaitTimeout on an open latch = %v, %v; want true", open, err)
	}
}

// A rate limiter has no release: its waiter gets permits when the window ends. On miniredis the window's key
// expires only when the test moves the clock, so the waiter, which sleeps the window's rest and then attempts
// again, finds the permits once the test has forwarded past the window.
func TestFixedWindowLimiter(t *testing.T) {
	c, srv := newClient(t)
	ctx := testCtx(t)
	const window = 100 * time.Millisecond
	l := c.FixedWindowLimiter("calls", 1, window)

	if ok, err := l.TryAcquire(ctx, 1, 0); !ok || err != nil {
		t.Fatalf("TryAcquire in a fresh window = %v, %v; want granted", ok, err)
	}
	if ok, err := l.TryAcquire(ctx, 1, 0); ok || err != nil {
		t.Fatalf("TryAcquire beyond the window's limit = %v, %v; want refused", ok, err)
	}
	waiter := l.AcquireAsync(ctx, 1)
	stillWaiting(t, "the limiter's waiter", waiter)
	srv.FastForward(window)
	woken(t, "the limiter's waiter", waiter) // within its next attempt, a window's rest after its first
	if n, err := l.Available(ctx); err != nil || n != 0 {
		t.Fatalf("Available after the waiter took the new window's permit = %d, %v; want 0", n, err)
	}
}

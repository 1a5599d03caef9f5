package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

func TestFamilyCloseFailsWaitersAndEndsHeldLocks(t *testing.T) {
	srv := startServer(t)
	other := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	c, err := rlock.NewClientFromURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	// A held fair lock, a semaphore waiter (waits for a message), a rate limiter waiter (waits on the timer) and
	// a latch awaiter.
	held, err := c.FairLock("f").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	semWait := c.Semaphore("s").AcquireAsync(ctx, 1)
	c.RateLimiter("r").SetRate(ctx, rlock.RateConfig{Rate: 1, Interval: time.Minute})
	c.RateLimiter("r").TryAcquire(ctx, 1, 0)
	rlWait := c.RateLimiter("r").AcquireAsync(ctx, 1)
	other.CountDownLatch("l").TrySetCount(ctx, 1)
	latchWait := c.CountDownLatch("l").AwaitAsync(ctx)
	subscribed(t, srv, "redisson_sc:{s}")
	subscribed(t, srv, "redisson_countdownlatch__channel__{l}")

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for name, get := range map[string]func() error{
		"semaphore":    func() error { _, err := semWait.Get(ctx); return err },
		"rate limiter": func() error { _, err := rlWait.Get(ctx); return err },
		"latch":        func() error { _, err := latchWait.Get(ctx); return err },
	} {
		if err := get(); !errors.Is(err, rlock.ErrClosed) {
			t.Errorf("%s waiter after Close: %v, want ErrClosed", name, err)
		}
	}
	if cause := doneCause(t, held, time.Second); !errors.Is(cause, rlock.ErrClosed) {
		t.Fatalf("held fair lock after Close: %v", cause)
	}
	// Every later call reports ErrClosed.
	if _, err := c.Semaphore("s").TryAcquire(ctx, 1, 0); !errors.Is(err, rlock.ErrClosed) {
		t.Fatalf("call after Close: %v", err)
	}
	// The fair lock stays on the server until its lease ends, as for a process that died.
	if n, _ := srv.DoInt(ctx, "EXISTS", "f"); n != 1 {
		t.Fatal("Close released the lock")
	}
}

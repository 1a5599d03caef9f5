package integration

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

func TestRateLimiterSlidingWindow(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	r := c.RateLimiter("rl")
	if _, err := r.TryAcquire(ctx, 1, 0); !errors.Is(err, rlock.ErrRateNotSet) {
		t.Fatalf("without a rate: %v", err)
	}
	cfg := rlock.RateConfig{Type: rlock.RateOverall, Rate: 3, Interval: 2 * time.Second}
	if ok, err := r.TrySetRate(ctx, cfg); !ok || err != nil {
		t.Fatalf("TrySetRate: %v %v", ok, err)
	}
	if got, _ := r.Config(ctx); got != cfg {
		t.Fatalf("Config %+v", got)
	}
	if _, err := r.TryAcquire(ctx, 4, 0); !errors.Is(err, rlock.ErrRateExceeded) {
		t.Fatalf("4 permits at a rate of 3: %v", err)
	}
	start := time.Now()
	for i := range 3 {
		if ok, err := r.TryAcquire(ctx, 1, 0); !ok || err != nil {
			t.Fatalf("permit %d: %v %v", i, ok, err)
		}
	}
	if ok, _ := r.TryAcquire(ctx, 1, 0); ok {
		t.Fatal("a 4th permit within the window")
	}
	// A wait that ends before the window slides gives up at once, not when the wait runs out.
	t0 := time.Now()
	if ok, _ := r.TryAcquire(ctx, 1, 500*time.Millisecond); ok {
		t.Fatal("permit granted within 500 ms")
	}
	if d := time.Since(t0); d > 400*time.Millisecond {
		t.Fatalf("a hopeless wait took %v", d)
	}
	if ok, err := r.TryAcquire(ctx, 1, 5*time.Second); !ok || err != nil {
		t.Fatalf("waiting for the window: %v %v", ok, err)
	}
	if d := time.Since(start); d < 1980*time.Millisecond || d > 2800*time.Millisecond {
		t.Fatalf("permit after %v, want when the first grant left the 2 s window", d)
	}
	// Soon the three first grants have all left the window (the second and third a little after the first): two
	// permits are left.
	eventually(t, time.Second, "two permits available", func() bool {
		n, _ := r.AvailablePermits(ctx)
		return n == 2
	})
}

func TestRateLimiterNeverGrantsMoreThanTheRateInAnyWindow(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 30*time.Second)
	const rate, interval = 10, 300 * time.Millisecond
	a.RateLimiter("rl").TrySetRate(ctx, rlock.RateConfig{Rate: rate, Interval: interval})
	type span struct{ before, after time.Time } // the grant happened on the server between these instants
	var mu sync.Mutex
	var grants []span
	var wg sync.WaitGroup
	for g := range 8 {
		r := a.RateLimiter("rl")
		if g%2 == 1 {
			r = b.RateLimiter("rl")
		}
		wg.Add(1)
		go func() { // owner: this test
			defer wg.Done()
			for range 5 {
				before := time.Now()
				if err := r.Acquire(ctx, 1); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				grants = append(grants, span{before, time.Now()})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(grants) != 40 {
		t.Fatalf("%d grants", len(grants))
	}
	// Grants that surely happened within one interval (started after T, returned before T + interval) must number
	// at most the rate.
	for _, w := range grants {
		n := 0
		for _, g := range grants {
			if !g.before.Before(w.before) && g.after.Sub(w.before) < interval {
				n++
			}
		}
		if n > rate {
			t.Fatalf("%d grants within one %v window", n, interval)
		}
	}
}

func TestRateLimiterPerClientRates(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	a.RateLimiter("rl").SetRate(ctx, rlock.RateConfig{Type: rlock.RatePerClient, Rate: 2, Interval: time.Minute})
	for _, c := range []*rlock.Client{a, b} {
		if ok, _ := c.RateLimiter("rl").TryAcquire(ctx, 2, 0); !ok {
			t.Fatal("a client's own rate refused")
		}
		if ok, _ := c.RateLimiter("rl").TryAcquire(ctx, 1, 0); ok {
			t.Fatal("a client's rate exceeded")
		}
	}
}

func TestFixedWindowLimiter(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	l := c.FixedWindowLimiter("rate.limiting:127.0.0.1", 3, 2*time.Second)
	start := time.Now()
	for range 3 {
		if ok, err := l.TryAcquire(ctx, 1, 0); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	if ok, _ := l.TryAcquire(ctx, 1, 0); ok {
		t.Fatal("4th call in the window allowed")
	}
	if n, _ := l.Available(ctx); n != 0 {
		t.Fatalf("available %d", n)
	}
	if err := l.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 1980*time.Millisecond || d > 2800*time.Millisecond {
		t.Fatalf("acquired in the next window after %v", d)
	}
	if _, err := l.TryAcquire(ctx, 4, 0); !errors.Is(err, rlock.ErrRateExceeded) {
		t.Fatalf("4 permits with a limit of 3: %v", err)
	}
}

package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// A lock held through the adapter stays held when the context it was acquired
// with ends — the harness ends it when a window closes, while holders may be
// inside their critical section — and goes with Unlock. rueidislock ties a
// lock's life to its acquisition context, so the adapter must detach it.
func TestRueidislockHoldOutlivesTheAcquisitionContext(t *testing.T) {
	srv := redistest.Start(t)
	bg := context.Background()
	for _, watched := range []bool{false, true} {
		name := "outlives"
		if watched {
			name += ":watched"
		}
		t.Run(name, func(t *testing.T) {
			lib := newTestRueidislock(t, srv.Addr())
			ctx, cancel := context.WithCancel(bg)
			var held workload.Held
			var err error
			if watched {
				held, err = lib.LockWatched(ctx, name)
			} else {
				held, err = lib.Lock(ctx, name)
			}
			if err != nil {
				t.Fatalf("Lock: %v", err)
			}
			cancel()
			h := held.(*rueidislockHeld)
			if err := h.ctx.Err(); err != nil {
				t.Fatalf("the held context ended with the acquisition's: %v", err)
			}
			if watched && h.value == "" {
				t.Fatal("LockWatched did not record the value the lock was acquired with")
			}
			key := "rueidislock:0:" + name
			if n, err := srv.DoInt(bg, "EXISTS", key); err != nil || n != 1 {
				t.Fatalf("EXISTS %s = %d, %v after the acquisition's context ended; want the lock still there", key, n, err)
			}
			if err := held.Unlock(bg); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			if n, err := srv.DoInt(bg, "EXISTS", key); err != nil || n != 0 {
				t.Fatalf("EXISTS %s = %d, %v after Unlock; want the lock gone", key, n, err)
			}
		})
	}
}

// A Lock whose context ends while it waits returns the context's error and
// leaves nothing held.
func TestRueidislockLockReturnsWhenItsContextEnds(t *testing.T) {
	srv := redistest.Start(t)
	bg := context.Background()
	lib := newTestRueidislock(t, srv.Addr())
	held, err := lib.Lock(bg, "busy")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	defer held.Unlock(bg)
	other := newTestRueidislock(t, srv.Addr())
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	if h, err := other.Lock(ctx, "busy"); !errors.Is(err, context.DeadlineExceeded) {
		if h != nil {
			h.Unlock(bg)
		}
		t.Fatalf("Lock on a held lock with a 50 ms context = %v, %v; want context.DeadlineExceeded", h, err)
	}
}

// newTestRueidislock builds the adapter as the bench does for W2x, closed at
// the end of the test.
func newTestRueidislock(t *testing.T, addr string) *rueidislockLib {
	t.Helper()
	lib, err := newRueidislock(context.Background(), workload.Config{Addr: addr, Lease: 10 * time.Second,
		WatchdogTTL: 3 * time.Second, Workload: workload.ContendedKeysSpread, Goroutines: 1})
	if err != nil {
		t.Fatalf("newRueidislock: %v", err)
	}
	t.Cleanup(func() { lib.Close() })
	return lib.(*rueidislockLib)
}

package rlock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// The handles' own calls that do no locking: Name, the key each handle works on, and FairLock.WithWaiterTimeout.

func TestEveryHandleNamesItsKey(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	ctx := context.Background()

	sem, pes, latch := c.Semaphore("h:sem"), c.PermitExpirableSemaphore("h:pes"), c.CountDownLatch("h:latch")
	rate, fenced, rw := c.RateLimiter("h:rate"), c.FencedLock("h:fenced"), c.ReadWriteLock("h:rw")
	if _, err := sem.TrySetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := pes.TrySetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := latch.TrySetCount(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := rate.TrySetRate(ctx, RateConfig{Type: RateOverall, Rate: 1, Interval: time.Minute}); err != nil {
		t.Fatal(err)
	}
	heldF, _, err := fenced.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	heldR, err := rw.ReadLock().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []struct {
		what, got, want string
	}{
		{"Semaphore", sem.Name(), "h:sem"},
		{"PermitExpirableSemaphore", pes.Name(), "h:pes"},
		{"CountDownLatch", latch.Name(), "h:latch"},
		{"RateLimiter", rate.Name(), "h:rate"},
		{"FencedLock", fenced.Name(), "h:fenced"},
		{"ReadWriteLock", rw.Name(), "h:rw"},
		{"ReadLock", rw.ReadLock().Name(), "h:rw"},
		{"WriteLock", rw.WriteLock().Name(), "h:rw"},
	} {
		if h.got != h.want {
			t.Errorf("%s.Name() = %q, want %q", h.what, h.got, h.want)
			continue
		}
		// The name is the key the handle's state lives in.
		if n, err := srv.DoInt(ctx, "EXISTS", h.got); err != nil || n != 1 {
			t.Errorf("%s: key %q exists %d, %v; want it written by the handle", h.what, h.got, n, err)
		}
	}
	if err := fenced.Unlock(heldF); err != nil {
		t.Fatal(err)
	}
	if err := rw.ReadLock().Unlock(heldR); err != nil {
		t.Fatal(err)
	}
}

// WithWaiterTimeout sets the liveness window of a copy's unbounded waiters: their deadline on the server is that
// far from the server's clock; the original handle keeps DefaultFairWaiterTimeout, and a window under 100 ms is
// raised to 100 ms.
func TestFairLockWithWaiterTimeoutSetsTheWaitersDeadline(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	base := c.FairLock("h:fair")
	held, err := base.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		l    *FairLock
		want time.Duration
	}{
		{base.WithWaiterTimeout(2 * time.Second), 2 * time.Second},
		{base.WithWaiterTimeout(time.Millisecond), 100 * time.Millisecond},
		{base, DefaultFairWaiterTimeout},
	} {
		wctx, stop := context.WithCancel(ctx)
		f := w.l.LockAsync(wctx) // another owner: queued behind the holder
		var owner string
		waitFor(t, func() bool {
			q, _ := srv.DoStrings(ctx, "LRANGE", "redisson_lock_queue:{h:fair}", "0", "0")
			if len(q) == 1 {
				owner = q[0]
			}
			return owner != ""
		})
		score, err := srv.DoString(ctx, "ZSCORE", "redisson_lock_timeout:{h:fair}", owner)
		if err != nil {
			t.Fatal(err)
		}
		deadline, _ := strconv.ParseInt(score, 10, 64)
		now := serverClockMillis(t, srv)
		// The deadline was set by the waiter's latest attempt, at most a refresh ago.
		if left := time.Duration(deadline-now) * time.Millisecond; left > w.want || left < w.want-fairRecheck-time.Second {
			t.Errorf("waiter's deadline %v from the server's now, want about %v", left, w.want)
		}
		stop() // the waiter leaves the queue
		if _, err := f.Get(ctx); err == nil {
			t.Fatal("a waiter behind the holder got the lock")
		}
		waitFor(t, func() bool {
			n, _ := srv.DoInt(ctx, "LLEN", "redisson_lock_queue:{h:fair}")
			return n == 0
		})
	}
	if err := base.Unlock(held); err != nil {
		t.Fatal(err)
	}
}

// serverClockMillis reads the server's clock (TIME) in Unix milliseconds.
func serverClockMillis(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	tm, err := srv.DoStrings(context.Background(), "TIME")
	if err != nil || len(tm) != 2 {
		t.Fatalf("TIME: %v, %v", tm, err)
	}
	sec, _ := strconv.ParseInt(tm[0], 10, 64)
	usec, _ := strconv.ParseInt(tm[1], 10, 64)
	return sec*1000 + usec/1000
}

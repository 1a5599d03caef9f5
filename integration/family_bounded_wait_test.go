package integration

import (
	"context"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/rlock"
)

// Every wait is bounded on the client's timer, so a lost message costs at most a bound, never a hang: here the
// state a waiter waits for is reached by raw commands that publish nothing (as when a message is lost), and the
// waiters must notice by themselves. Semaphores and latches have no lease to bound a wait, so their head waiter
// looks again every second (rlock's recheckBound).
const recheckSlack = 3 * time.Second // recheckBound (1 s) plus a generous margin for a loaded machine

func TestSemaphoreWaiterFindsPermitsThatNoMessageAnnounced(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	s := c.Semaphore("sem:silent")
	if ok, err := s.TrySetPermits(ctx, 0); !ok || err != nil {
		t.Fatalf("TrySetPermits: %v %v", ok, err)
	}
	futs := []*future.Future[struct{}]{s.AcquireAsync(ctx, 1), s.AcquireAsync(ctx, 1)}
	subscribed(t, srv, "redisson_sc:{sem:silent}")
	start := time.Now()
	if _, err := srv.Do(ctx, "INCRBY", "sem:silent", "2"); err != nil { // no PUBLISH
		t.Fatal(err)
	}
	if _, err := future.All(futs...).Get(ctx); err != nil {
		t.Fatalf("waiters did not get the permits: %v", err)
	}
	if d := time.Since(start); d > recheckSlack {
		t.Fatalf("waiters took the permits %v after they appeared", d)
	}
	if n, _ := s.AvailablePermits(ctx); n != 0 {
		t.Fatalf("available %d, want 0", n)
	}
}

func TestLatchAwaiterNoticesAnOpeningThatNoMessageAnnounced(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	l := c.CountDownLatch("latch:silent")
	if ok, err := l.TrySetCount(ctx, 1); !ok || err != nil {
		t.Fatalf("TrySetCount: %v %v", ok, err)
	}
	futs := []*future.Future[struct{}]{l.AwaitAsync(ctx), l.AwaitAsync(ctx), l.AwaitAsync(ctx)}
	subscribed(t, srv, "redisson_countdownlatch__channel__{latch:silent}")
	start := time.Now()
	if _, err := srv.Do(ctx, "DEL", "latch:silent"); err != nil { // opened without a message
		t.Fatal(err)
	}
	if _, err := future.All(futs...).Get(ctx); err != nil {
		t.Fatalf("awaiters did not return: %v", err)
	}
	if d := time.Since(start); d > recheckSlack {
		t.Fatalf("awaiters returned %v after the latch opened", d)
	}
}

func TestLockWaiterFindsAReleaseThatNoMessageAnnounced(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	for _, fenced := range []bool{false, true} {
		// Another owner's lock without expiry (not written by a lock client): no TTL bounds the wait.
		if _, err := srv.Do(ctx, "HSET", "lock:silent", "7e0f1a9c-0000-4000-8000-000000000000:1", "1"); err != nil {
			t.Fatal(err)
		}
		var f *future.Future[context.Context]
		if fenced {
			f = future.Then(c.FencedLock("lock:silent").LockAsync(ctx),
				func(fe rlock.Fence, err error) (context.Context, error) { return fe.Held, err })
		} else {
			f = c.Lock("lock:silent").LockAsync(ctx)
		}
		subscribed(t, srv, "redisson_lock__channel:{lock:silent}")
		start := time.Now()
		if _, err := srv.Do(ctx, "DEL", "lock:silent"); err != nil { // released without a message
			t.Fatal(err)
		}
		held, err := f.Get(ctx)
		if err != nil {
			t.Fatalf("fenced %v: %v", fenced, err)
		}
		if d := time.Since(start); d > recheckSlack {
			t.Fatalf("fenced %v: the waiter acquired %v after the release", fenced, d)
		}
		if err := c.Lock("lock:silent").Unlock(held); err != nil {
			t.Fatal(err)
		}
	}
}

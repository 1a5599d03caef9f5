package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/internal/faultproxy"
	"github.com/locksmith-go/locksmith/internal/redistest"
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

// A TryLock's wait bounds the call even while an attempt is in flight (every waiter ends within its bound). Found
// by the chaos runs (partitions, latency spikes): the wait's deadline lived on the waiter's timer, which was
// cancelled while an attempt was sent and re-armed only when it was answered, so a wait that ended meanwhile lasted
// until the transport gave up (the response timeout and its retries). Here every request stalls in a proxy once the
// client is connected: with a response timeout of 3 s, a wait of 300 ms must end well before a second, with an
// unknown outcome (an attempt answered later is released, as for a waiter whose context ended).
func TestTryLockWaitBoundsAnAttemptInFlight(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "fenced"}[fenced], func(t *testing.T) {
			srv := redistest.Start(t)
			px := faultproxy.Start(t, srv.Addr())
			c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: px.Addr(), ResponseTimeout: 3 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			ctx := ctxT(t, 10*time.Second)
			px.Stall(faultproxy.Upstream)
			const wait = 300 * time.Millisecond
			start := time.Now()
			if fenced {
				_, _, err = c.FencedLock("in-flight").TryLock(ctx, wait, 0)
			} else {
				_, err = c.Lock("in-flight").TryLock(ctx, wait, 0)
			}
			took := time.Since(start)
			px.Restore()
			if !errors.Is(err, rlock.ErrOutcomeUnknown) || errors.Is(err, rlock.ErrNotAcquired) {
				t.Errorf("err = %v, want ErrOutcomeUnknown: the attempt was never answered", err)
			}
			if took > wait+700*time.Millisecond {
				t.Errorf("TryLock with a wait of %v returned after %v: the wait does not bound an attempt in flight",
					wait, took.Round(time.Millisecond))
			}
		})
	}
}

// A refusal that reports a TTL of 0 (the holder's key in its last millisecond: PTTL answers 0 before the key
// expires) still bounds the wait: the waiter tries again at once rather than waiting for a message an expiry never
// publishes. Found by the chaos runs' lease-expiry scenario (a LockLease that never returned): a bound of 0 was
// taken for "no bound", and about a third of such acquires hung until their context ended.
func TestWaiterRetriesAfterARefusalWithZeroTTL(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	bg := context.Background()
	for _, fenced := range []bool{false, true} {
		hung := 0
		const n = 60
		for i := range n {
			lock := fmt.Sprintf("zero-ttl:%v:%d", fenced, i)
			// Another owner's lock in its last millisecond.
			if _, err := srv.Do(bg, "HSET", lock, "7e0f1a9c-0000-4000-8000-000000000000:1", "1"); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.Do(bg, "PEXPIRE", lock, "1"); err != nil {
				t.Fatal(err)
			}
			// The lock is free within a millisecond: 300 ms is a generous bound.
			ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
			var err error
			if fenced {
				_, _, err = c.FencedLock(lock).LockLease(ctx, time.Second)
			} else {
				_, err = c.Lock(lock).LockLease(ctx, time.Second)
			}
			cancel()
			if err != nil {
				hung++
			}
		}
		if hung > 0 {
			t.Errorf("fenced=%v: %d of %d acquires of a lock that expired within 1 ms were still waiting after 300 ms",
				fenced, hung, n)
		}
	}
}

package integration

import (
	"context"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/future"
)

func TestCountDownLatchReleasesEveryAwaiterAtZero(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	if ok, err := a.CountDownLatch("latch").TrySetCount(ctx, 3); !ok || err != nil {
		t.Fatalf("TrySetCount: %v %v", ok, err)
	}
	if ok, _ := a.CountDownLatch("latch").TrySetCount(ctx, 5); ok {
		t.Fatal("TrySetCount on a closed latch")
	}
	futs := make([]*future.Future[struct{}], 6)
	for i := range futs {
		c := a
		if i%2 == 1 {
			c = b
		}
		futs[i] = c.CountDownLatch("latch").AwaitAsync(ctx)
	}
	eventually(t, 5*time.Second, "both clients await", func() bool {
		r, err := srv.Do(ctx, "PUBSUB", "NUMSUB", "redisson_countdownlatch__channel__{latch}")
		return err == nil && r.Array[1].Int == 2
	})
	for i := range 2 {
		if n, err := a.CountDownLatch("latch").CountDown(ctx); err != nil || n != int64(2-i) {
			t.Fatalf("CountDown: %d %v", n, err)
		}
	}
	for _, f := range futs {
		if f.IsDone() {
			t.Fatal("an awaiter returned before the count reached zero")
		}
	}
	start := time.Now()
	if _, err := b.CountDownLatch("latch").CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := future.All(futs...).Get(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("awaiters released %v after the count reached zero", d)
	}
	if n, _ := a.CountDownLatch("latch").Count(ctx); n != 0 {
		t.Fatalf("count %d", n)
	}
	if err := a.CountDownLatch("latch").Await(ctx); err != nil {
		t.Fatalf("Await on an open latch: %v", err)
	}
}

func TestCountDownLatchAwaitTimeoutAndDelete(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	l := c.CountDownLatch("latch")
	l.TrySetCount(ctx, 1)
	start := time.Now()
	if ok, err := l.AwaitTimeout(ctx, 200*time.Millisecond); ok || err != nil {
		t.Fatalf("AwaitTimeout on a closed latch: %v %v", ok, err)
	}
	if d := time.Since(start); d < 190*time.Millisecond || d > 600*time.Millisecond {
		t.Fatalf("AwaitTimeout returned after %v", d)
	}
	fut := l.AwaitTimeoutAsync(ctx, 5*time.Second)
	subscribed(t, srv, "redisson_countdownlatch__channel__{latch}")
	if ok, _ := l.Delete(ctx); !ok {
		t.Fatal("Delete of a closed latch reported false")
	}
	if ok, err := fut.Get(ctx); !ok || err != nil {
		t.Fatalf("awaiter after Delete: %v %v", ok, err)
	}
	// An awaiter whose context ends returns the context's error.
	l.TrySetCount(ctx, 1)
	actx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := l.Await(actx); err != context.DeadlineExceeded {
		t.Fatalf("Await with an ending context: %v", err)
	}
}

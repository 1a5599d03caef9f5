package integration

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/rlock"
)

// famQueueLen returns the fair lock's server queue length.
func famQueueLen(t testing.TB, srv server, name string) int64 {
	n, err := srv.DoInt(context.Background(), "LLEN", "redisson_lock_queue:{"+name+"}")
	if err != nil {
		t.Fatalf("LLEN: %v", err)
	}
	return n
}

func TestFairLockGrantsEightWaitersInArrivalOrder(t *testing.T) {
	srv := startServer(t)
	clients := []*rlock.Client{newLockClient(t, srv, 0), newLockClient(t, srv, 0), newLockClient(t, srv, 0), newLockClient(t, srv, 0)}
	ctx := ctxT(t, 20*time.Second)
	holder, err := clients[0].FairLock("fair").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 8 {
		l := clients[i%len(clients)].FairLock("fair")
		wg.Add(1)
		go func() { // owner: this test; exits when its lock is released
			defer wg.Done()
			held, err := l.Lock(ctx)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if err := l.Unlock(held); err != nil {
				t.Errorf("waiter %d unlock: %v", i, err)
			}
		}()
		// Waiters start 100 ms apart; each is in the server's queue before the next starts.
		eventually(t, 5*time.Second, "waiter queued", func() bool { return famQueueLen(t, srv, "fair") == int64(i+1) })
		time.Sleep(100 * time.Millisecond)
	}
	if err := clients[0].FairLock("fair").Unlock(holder); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("acquisition order %v, want 0..7", order)
		}
	}
	if len(order) != 8 {
		t.Fatalf("only %d waiters acquired", len(order))
	}
	if n := famQueueLen(t, srv, "fair"); n != 0 {
		t.Fatalf("queue length %d after all acquired", n)
	}
}

func TestFairLockFiveHundredWaitersAllAcquire(t *testing.T) {
	srv := startServer(t)
	clients := []*rlock.Client{newLockClient(t, srv, 0), newLockClient(t, srv, 0)}
	ctx := ctxT(t, 60*time.Second)
	holder, err := clients[0].FairLock("many").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	var inside, acquired atomic.Int64
	var overlap atomic.Bool
	futs := make([]*future.Future[struct{}], n)
	for i := range n {
		l := clients[i%2].FairLock("many")
		p := future.NewPromise[struct{}]()
		futs[i] = p.Future()
		// Asynchronous waiters: no goroutine per waiter on the test's side either.
		l.LockAsync(ctx).OnComplete(func(held context.Context, err error) {
			if err != nil {
				p.Fail(err)
				return
			}
			if inside.Add(1) != 1 {
				overlap.Store(true)
			}
			acquired.Add(1)
			inside.Add(-1)
			l.UnlockAsync(held).OnComplete(func(_ struct{}, err error) { p.Complete(struct{}{}, err) })
		})
	}
	eventually(t, 20*time.Second, "all queued", func() bool { return famQueueLen(t, srv, "many") == n })
	if err := clients[0].FairLock("many").Unlock(holder); err != nil {
		t.Fatal(err)
	}
	if _, err := future.All(futs...).Get(ctx); err != nil {
		t.Fatalf("after %d acquisitions: %v", acquired.Load(), err)
	}
	if acquired.Load() != n || overlap.Load() {
		t.Fatalf("acquired %d of %d, overlap %v", acquired.Load(), n, overlap.Load())
	}
	if ch, _ := srv.DoStrings(ctx, "PUBSUB", "CHANNELS"); len(ch) != 0 {
		t.Fatalf("%d channels left subscribed", len(ch))
	}
}

func TestFairLockTryWithoutWaitNeverQueues(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	held, err := a.FairLock("f").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := b.FairLock("f").TryLock(ctx, 0, 0); !errors.Is(err, rlock.ErrNotAcquired) {
			t.Fatalf("TryLock(0) on a held lock: %v", err)
		}
	}
	if n := famQueueLen(t, srv, "f"); n != 0 {
		t.Fatalf("a try without wait queued: queue length %d", n)
	}
	// Re-entry by the holder's own context needs no queueing either.
	if again, err := a.FairLock("f").TryLock(held, 0, 0); err != nil || again != held {
		t.Fatalf("re-entry: %v", err)
	}
	if n, _ := a.FairLock("f").HoldCount(held); n != 2 {
		t.Fatalf("hold count %d", n)
	}
	if ok, _ := a.FairLock("f").IsHeldBy(held); !ok {
		t.Fatal("IsHeldBy(holder) false")
	}
	if ok, _ := b.FairLock("f").IsHeldBy(rlock.WithOwner(ctx, "1")); ok {
		t.Fatal("IsHeldBy(another owner) true")
	}
	if ttl, _ := a.FairLock("f").RemainTimeToLive(ctx); ttl < 25*time.Second || ttl > rlock.DefaultWatchdogTimeout {
		t.Fatalf("RemainTimeToLive %v, want about the watchdog timeout", ttl)
	}
	if locked, _ := b.FairLock("f").IsLocked(ctx); !locked {
		t.Fatal("IsLocked false")
	}
}

func TestFairLockAbandonedWaiterLeavesAtOnce(t *testing.T) {
	srv := startServer(t)
	a, b, c := newLockClient(t, srv, 0), newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 20*time.Second)
	held, err := a.FairLock("f").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// B waits with a long wait, then its caller gives up (context cancelled).
	bctx, cancelB := context.WithCancel(ctx)
	bf := b.FairLock("f").TryLockAsync(bctx, time.Minute, 0)
	eventually(t, 5*time.Second, "B queued", func() bool { return famQueueLen(t, srv, "f") == 1 })
	cf := c.FairLock("f").TryLockAsync(ctx, 10*time.Second, 0)
	eventually(t, 5*time.Second, "C queued", func() bool { return famQueueLen(t, srv, "f") == 2 })
	cancelB()
	if _, err := bf.Get(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("B: %v", err)
	}
	eventually(t, 5*time.Second, "B left the queue", func() bool { return famQueueLen(t, srv, "f") == 1 })
	start := time.Now()
	if err := a.FairLock("f").Unlock(held); err != nil {
		t.Fatal(err)
	}
	heldC, err := cf.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("C acquired %v after the release: the abandoned waiter delayed it", d)
	}
	c.FairLock("f").Unlock(heldC)
}

func TestFairLockKilledWaiterDelaysOthersByNoMoreThanItsWait(t *testing.T) {
	srv := startServer(t)
	a, c := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 20*time.Second)
	held, err := a.FairLock("f").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// B is a waiter in a process that dies: its client is closed while it waits, so it never leaves the queue.
	b, err := rlock.NewClientFromURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	const bWait = 800 * time.Millisecond
	bStart := time.Now()
	b.FairLock("f").TryLockAsync(ctx, bWait, 0)
	eventually(t, 5*time.Second, "B queued", func() bool { return famQueueLen(t, srv, "f") == 1 })
	b.Close()
	cf := c.FairLock("f").TryLockAsync(ctx, 10*time.Second, 0)
	eventually(t, 5*time.Second, "C queued", func() bool { return famQueueLen(t, srv, "f") == 2 })
	// The holder leaves: the wake-up goes to B, the head, which is dead. C gets the lock once B's deadline passed.
	if err := a.FairLock("f").Unlock(held); err != nil {
		t.Fatal(err)
	}
	heldC, err := cf.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if late := time.Since(bStart) - bWait; late > 600*time.Millisecond { // C's wake-up, attempt and a loaded machine's delays
		t.Fatalf("C acquired %v after the dead waiter's deadline", late)
	}
	c.FairLock("f").Unlock(heldC)
}

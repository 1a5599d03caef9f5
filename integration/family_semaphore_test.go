package integration

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

func TestSemaphorePermitsAreTakenReleasedAddedAndDrained(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	s := c.Semaphore("sem")
	if ok, err := s.TrySetPermits(ctx, 3); !ok || err != nil {
		t.Fatalf("TrySetPermits: %v %v", ok, err)
	}
	if ok, _ := s.TrySetPermits(ctx, 9); ok {
		t.Fatal("TrySetPermits set an already set semaphore")
	}
	if err := s.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.TryAcquire(ctx, 2, 0); ok || err != nil {
		t.Fatalf("TryAcquire(2) with 1 left: %v %v", ok, err)
	}
	if n, _ := s.AvailablePermits(ctx); n != 1 {
		t.Fatalf("available %d", n)
	}
	if err := s.Release(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.AddPermits(ctx, -1); n != 2 {
		t.Fatalf("after AddPermits(-1): %d", n)
	}
	if n, _ := s.DrainPermits(ctx); n != 2 {
		t.Fatalf("drained %d", n)
	}
	if n, _ := s.AvailablePermits(ctx); n != 0 {
		t.Fatalf("available after drain %d", n)
	}
}

func TestSemaphoreWaiterIsWokenByARelease(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	a.Semaphore("sem").TrySetPermits(ctx, 1)
	if err := a.Semaphore("sem").Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fut := b.Semaphore("sem").TryAcquireAsync(ctx, 1, 5*time.Second)
	subscribed(t, srv, "redisson_sc:{sem}")
	start := time.Now()
	if err := a.Semaphore("sem").Release(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if ok, err := fut.Get(ctx); !ok || err != nil {
		t.Fatalf("waiter: %v %v", ok, err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("waiter got the permit %v after the release", d)
	}
	// A try whose wait runs out reports false after the wait.
	start = time.Now()
	if ok, err := a.Semaphore("sem").TryAcquire(ctx, 1, 200*time.Millisecond); ok || err != nil {
		t.Fatalf("TryAcquire with none left: %v %v", ok, err)
	}
	if d := time.Since(start); d < 190*time.Millisecond || d > 600*time.Millisecond {
		t.Fatalf("TryAcquire returned after %v, want about its 200 ms wait", d)
	}
}

func TestSemaphoreNeverLetsMoreHoldersInThanPermits(t *testing.T) {
	srv := startServer(t)
	clients := []*rlock.Client{newLockClient(t, srv, 0), newLockClient(t, srv, 0), newLockClient(t, srv, 0)}
	ctx := ctxT(t, 30*time.Second)
	clients[0].Semaphore("sem").TrySetPermits(ctx, 3)
	var inside, peak, done atomic.Int64
	var wg sync.WaitGroup
	for g := range 24 {
		s := clients[g%3].Semaphore("sem")
		wg.Add(1)
		go func() { // owner: this test
			defer wg.Done()
			for range 5 {
				if err := s.Acquire(ctx, 1); err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				if err := s.Release(ctx, 1); err != nil {
					t.Error(err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if done.Load() != 120 || peak.Load() > 3 {
		t.Fatalf("%d acquisitions, peak %d inside (3 permits)", done.Load(), peak.Load())
	}
	if n, _ := clients[0].Semaphore("sem").AvailablePermits(ctx); n != 3 {
		t.Fatalf("available at the end %d", n)
	}
	if ch, _ := srv.DoStrings(ctx, "PUBSUB", "CHANNELS"); len(ch) != 0 {
		t.Fatalf("channels left: %v", ch)
	}
}

func TestSemaphoreAbandonedAcquireKeepsNoPermit(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	s := c.Semaphore("sem")
	wctx, cancel := context.WithCancel(ctx)
	fut := s.AcquireAsync(wctx, 2)
	subscribed(t, srv, "redisson_sc:{sem}")
	cancel()
	if _, err := fut.Get(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned acquire: %v", err)
	}
	s.TrySetPermits(ctx, 2)
	if n, _ := s.AvailablePermits(ctx); n != 2 {
		t.Fatalf("available %d: the abandoned acquire took permits", n)
	}
}

func TestPermitExpirableSemaphoreLeaseEndReturnsThePermit(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	s := a.PermitExpirableSemaphore("pes")
	s.TrySetPermits(ctx, 1)
	start := time.Now()
	id, err := s.Acquire(ctx, 300*time.Millisecond)
	if err != nil || len(id) != 32 {
		t.Fatalf("Acquire: %q %v", id, err)
	}
	// Nobody releases: the waiter gets the permit when the lease ends.
	id2, err := b.PermitExpirableSemaphore("pes").TryAcquire(ctx, 2*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 280*time.Millisecond || d > 800*time.Millisecond {
		t.Fatalf("second permit after %v, want when the 300 ms lease ended", d)
	}
	if err := s.Release(ctx, id); !errors.Is(err, rlock.ErrPermitNotFound) {
		t.Fatalf("releasing an expired permit: %v, want ErrPermitNotFound", err)
	}
	if err := s.Release(ctx, id2); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, id2); !errors.Is(err, rlock.ErrPermitNotFound) {
		t.Fatalf("releasing twice: %v", err)
	}
	if err := s.Release(ctx, "00112233445566778899aabbccddeeff"); !errors.Is(err, rlock.ErrPermitNotFound) {
		t.Fatalf("releasing an unknown id: %v", err)
	}
}

func TestPermitExpirableSemaphoreUpdateLeaseAndRelease(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	s := c.PermitExpirableSemaphore("pes")
	s.TrySetPermits(ctx, 2)
	ids, err := s.AcquireN(ctx, 2, 200*time.Millisecond)
	if err != nil || len(ids) != 2 {
		t.Fatal(ids, err)
	}
	if err := s.UpdateLease(ctx, ids[0], 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateLease(ctx, "ffeeddccbbaa99887766554433221100", time.Second); !errors.Is(err, rlock.ErrPermitNotFound) {
		t.Fatalf("UpdateLease of an unknown id: %v", err)
	}
	eventually(t, 2*time.Second, "the short lease ends", func() bool {
		avail, held, _ := s.Permits(ctx)
		return avail == 1 && held == 1
	})
	if err := s.Release(ctx, ids[0]); err != nil {
		t.Fatalf("release of the extended permit: %v", err)
	}
	if avail, held, _ := s.Permits(ctx); avail != 2 || held != 0 {
		t.Fatalf("permits %d available, %d held", avail, held)
	}
}

func TestPermitExpirableSemaphoreConcurrentHoldersStayWithinPermits(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 30*time.Second)
	a.PermitExpirableSemaphore("pes").TrySetPermits(ctx, 2)
	var inside, peak atomic.Int64
	var wg sync.WaitGroup
	for g := range 10 {
		s := a.PermitExpirableSemaphore("pes")
		if g%2 == 1 {
			s = b.PermitExpirableSemaphore("pes")
		}
		wg.Add(1)
		go func() { // owner: this test
			defer wg.Done()
			for range 5 {
				id, err := s.Acquire(ctx, 10*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				if err := s.Release(ctx, id); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if peak.Load() > 2 {
		t.Fatalf("peak %d holders with 2 permits", peak.Load())
	}
}

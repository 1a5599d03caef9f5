package integration

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// Many owners on few locks: mutual exclusion, no leaked subscriptions or renewals, no starvation.

// exclusion detects overlapping holders of one lock inside this process.
type exclusion struct{ holders, violations atomic.Int64 }

func (e *exclusion) enter() {
	if e.holders.Add(1) != 1 {
		e.violations.Add(1)
	}
}
func (e *exclusion) leave() { e.holders.Add(-1) }

// Redisson's testConcurrency_MultiInstance: 16 clients × 100 iterations of read-increment-write on a shared
// counter in Redis, under the lock. Any overlap loses an increment.
func TestSharedCounterSixteenClients(t *testing.T) {
	srv := startServer(t)
	ctx := ctxT(t, 60*time.Second)
	const clients, iterations = 16, 100
	var ex exclusion
	cs := make([]*rlock.Client, clients)
	for i := range cs {
		cs[i] = newLockClient(t, srv, 2*time.Second)
	}
	inParallel(t, clients, func(i int) error {
		c := cs[i]
		l := c.Lock("counter-lock")
		for j := 0; j < iterations; j++ {
			err := l.Run(ctx, func(held context.Context) error {
				ex.enter()
				defer ex.leave()
				v, err := c.Conn().Do(held, "GET", "counter").Get(held)
				if err != nil {
					return err
				}
				n := 0
				if !v.Null {
					if n, err = strconv.Atoi(v.Str); err != nil {
						return err
					}
				}
				_, err = c.Conn().Do(held, "SET", "counter", strconv.Itoa(n+1)).Get(held)
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if n, err := srv.DoInt(ctx, "GET", "counter"); err != nil || n != clients*iterations {
		t.Fatalf("counter = %d, %v; want %d", n, err, clients*iterations)
	}
	if v := ex.violations.Load(); v != 0 {
		t.Fatalf("%d overlapping holds", v)
	}
}

// Redisson's testSubscriptionsPerConnection: 5,000 lock/unlock cycles over 5 names, with waiting, leave no
// subscription behind.
func TestCyclesLeaveNoSubscriptions(t *testing.T) {
	srv := startServer(t)
	ctx := ctxT(t, 60*time.Second)
	clients := []*rlock.Client{newLockClient(t, srv, 0), newLockClient(t, srv, 0)}
	const workers, cycles = 10, 500 // 5,000 cycles
	inParallel(t, workers, func(w int) error {
		c := clients[w%len(clients)]
		for i := 0; i < cycles; i++ {
			l := c.Lock("cycle-" + strconv.Itoa((w+i)%5))
			held, err := l.Lock(ctx)
			if err != nil {
				return err
			}
			if err := l.Unlock(held); err != nil {
				return err
			}
		}
		return nil
	})
	for _, c := range clients {
		if st := c.Stats(); !idle(st) {
			t.Errorf("client state after the cycles: %+v", st)
		}
	}
	eventually(t, 5*time.Second, "PUBSUB CHANNELS to be empty", func() bool {
		chans, err := srv.DoStrings(ctx, "PUBSUB", "CHANNELS")
		return err == nil && len(chans) == 0
	})
}

// Redisson's testTryLockConcurrency-style churn: 16 goroutines × 10,000 try/unlock cycles on one lock. Nothing
// is lost, nothing leaks: no held lock, no waiter, no renewal afterwards.
func TestTryUnlockChurnLeaksNothing(t *testing.T) {
	srv := startServer(t)
	ctx := ctxT(t, 120*time.Second)
	var lost, renewals atomic.Int64
	c, err := rlock.NewClient(lockConfig(srv, rlock.Config{
		WatchdogTimeout: 600 * time.Millisecond,
		Observer: observerFunc{
			lost:    func(rlock.LostEvent) { lost.Add(1) },
			renewal: func(e rlock.RenewalEvent) { renewals.Add(int64(e.Locks)) },
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const goroutines = 16
	iterations := 10_000
	if testing.Short() {
		iterations = 1_000
	}
	var ex exclusion
	var acquired atomic.Int64
	l := c.Lock("churn")
	inParallel(t, goroutines, func(int) error {
		for i := 0; i < iterations; i++ {
			held, err := l.TryLock(ctx, 0, 0)
			if err != nil {
				continue // ErrNotAcquired (checked below by the count)
			}
			ex.enter()
			acquired.Add(1)
			ex.leave()
			if err := l.Unlock(held); err != nil {
				return err
			}
		}
		return nil
	})
	t.Logf("%d of %d tries acquired", acquired.Load(), goroutines*iterations)
	if acquired.Load() == 0 || ex.violations.Load() != 0 || lost.Load() != 0 {
		t.Fatalf("acquired %d, violations %d, lost %d", acquired.Load(), ex.violations.Load(), lost.Load())
	}
	if st := c.Stats(); !idle(st) {
		t.Fatalf("state after the churn: %+v", st)
	}
	before := renewals.Load()
	select {
	case <-time.After(time.Second): // longer than a renewal period (200 ms) plus batching
	case <-ctx.Done():
	}
	if n := renewals.Load() - before; n != 0 {
		t.Fatalf("%d renewals after the churn ended", n)
	}
	if n, _ := srv.DoInt(ctx, "EXISTS", "churn"); n != 0 {
		t.Fatal("the lock is still held")
	}
}

// Local waiters are served in order by hand-off; a waiter in another process still gets the lock while this
// client's goroutines keep passing it among themselves (the hand-off burst ends with an ordinary release).
func TestHandoffIsExclusiveAndDoesNotStarveOthers(t *testing.T) {
	srv := startServer(t)
	ctx := ctxT(t, 60*time.Second)
	busy := newLockClient(t, srv, 0)
	other := newLockClient(t, srv, 0)
	var ex exclusion
	stop := make(chan struct{})
	var wg sync.WaitGroup
	counts := make([]int, 8)
	for g := range counts {
		wg.Add(1)
		go func() { // owned by the test; waited for by wg, ended by stop
			defer wg.Done()
			l := busy.Lock("hot")
			for {
				select {
				case <-stop:
					return
				default:
				}
				held, err := l.Lock(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				ex.enter()
				counts[g]++
				ex.leave()
				if err := l.Unlock(held); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	// The outsider must get in while the eight keep going.
	for i := 0; i < 5; i++ {
		held, err := other.Lock("hot").TryLock(ctx, 5*time.Second, 0)
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("outsider starved: %v", err)
		}
		ex.enter()
		ex.leave()
		mustUnlock(t, other.Lock("hot"), held)
	}
	close(stop)
	wg.Wait()
	if v := ex.violations.Load(); v != 0 {
		t.Fatalf("%d overlapping holds", v)
	}
	for g, n := range counts {
		if n == 0 {
			t.Errorf("goroutine %d never got the lock: %v", g, counts)
		}
	}
	t.Logf("acquisitions per goroutine: %v", fmt.Sprint(counts))
}

package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// A mix of every way an acquire can end — granted, re-entered, wait ran out, context cancelled or timed out,
// async and sync — by 32 goroutines of two clients on two locks, racing with hand-offs. Mutual exclusion must
// hold throughout, and when it is over nothing may be left: no lock, no hold, no waiter, no subscription.
func TestAcquireOutcomesMixedStress(t *testing.T) {
	srv := startServer(t)
	ctx := ctxT(t, 60*time.Second)
	var evmu sync.Mutex
	events := map[string][]string{}
	obs := eventLog{f: func(owner, e string) { evmu.Lock(); events[owner] = append(events[owner], e); evmu.Unlock() }}
	mk := func() *rlock.Client {
		c, err := rlock.NewClient(lockConfig(srv, rlock.Config{WatchdogTimeout: time.Second, Observer: obs}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	clients := []*rlock.Client{mk(), mk()}
	names := []string{"stress-a", "stress-b"}
	var ex [2]exclusion
	duration := 3 * time.Second
	if testing.Short() {
		duration = time.Second
	}
	end := time.Now().Add(duration)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() { // owned by the test; waited for by wg
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			c := clients[g%2]
			for time.Now().Before(end) {
				k := rng.IntN(2)
				l := c.Lock(names[k])
				var held context.Context
				var err error
				switch rng.IntN(5) {
				case 0:
					held, err = l.Lock(ctx)
				case 1:
					held, err = l.TryLock(ctx, time.Duration(rng.IntN(3000))*time.Microsecond, 0)
				case 2:
					short, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(2000))*time.Microsecond)
					held, err = l.Lock(short)
					cancel()
				case 3:
					cctx, cancel := context.WithCancel(ctx)
					f := l.LockAsync(cctx)
					if rng.IntN(2) == 0 {
						cancel()
					}
					held, err = f.Get(ctx)
					cancel()
				case 4:
					held, err = l.TryLock(ctx, 0, time.Duration(1+rng.IntN(5))*time.Second)
				}
				if err != nil {
					// An unknown outcome is a legitimate answer too: a wait (a TryLock of a few milliseconds) that
					// runs out while its attempt is in flight, and whose reply does not come within the grace that
					// follows (a loaded machine); the possible grant is then released by the client.
					if !errors.Is(err, rlock.ErrNotAcquired) && !errors.Is(err, context.Canceled) &&
						!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, rlock.ErrOutcomeUnknown) {
						errs <- err
						return
					}
					continue
				}
				ex[k].enter()
				if rng.IntN(4) == 0 { // re-enter and release the inner hold
					if _, err := l.Lock(held); err != nil {
						errs <- err
						return
					}
					if err := l.Unlock(held); err != nil {
						errs <- err
						return
					}
				}
				ex[k].leave()
				if err := l.Unlock(held); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	stuck := time.AfterFunc(duration+10*time.Second, func() {
		for i, c := range clients {
			t.Logf("client %d: %+v", i, c.Stats())
		}
		for _, n := range names {
			m, _ := srv.DoMap(context.Background(), "HGETALL", n)
			ttl, _ := srv.DoInt(context.Background(), "PTTL", n)
			sub, _ := srv.Do(context.Background(), "PUBSUB", "NUMSUB", "redisson_lock__channel:{"+n+"}")
			t.Logf("%s: %v pttl %d numsub %v", n, m, ttl, sub)
			for o := range m {
				evmu.Lock()
				t.Logf("events of %s: %v", o, events[o])
				evmu.Unlock()
			}
		}
	})
	wg.Wait()
	stuck.Stop()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for k := range ex {
		if v := ex[k].violations.Load(); v != 0 {
			t.Fatalf("%s: %d overlapping holds", names[k], v)
		}
	}
	eventually(t, 5*time.Second, "every lock, hold, waiter and subscription to be gone", func() bool {
		for _, c := range clients {
			if !idle(c.Stats()) {
				return false
			}
		}
		n, _ := srv.DoInt(ctx, "DBSIZE")
		chans, _ := srv.DoStrings(ctx, "PUBSUB", "CHANNELS")
		return n == 0 && len(chans) == 0
	})
}

// eventLog records each owner's lock events, so that a stuck run can say what became of the lock it finds held.
type eventLog struct {
	rlock.NopObserver
	f func(owner, e string)
}

func (d eventLog) Acquired(e rlock.AcquiredEvent) {
	d.f(e.Owner, fmt.Sprintf("acq handoff=%v re=%v", e.HandOff, e.Reentrant))
}
func (d eventLog) Released(e rlock.ReleasedEvent) {
	d.f(e.Owner, fmt.Sprintf("rel handoff=%v err=%v", e.HandOff, e.Err))
}
func (d eventLog) Lost(e rlock.LostEvent) { d.f(e.Owner, fmt.Sprintf("lost %v", e.Cause)) }

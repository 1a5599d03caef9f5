package integration

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// redMasters starts n independent redis-servers with one client each.
func redMasters(t *testing.T, n int, watchdog time.Duration) ([]*redistest.Server, []*rlock.Client) {
	t.Helper()
	srvs := make([]*redistest.Server, n)
	cs := make([]*rlock.Client, n)
	for i := range n {
		srvs[i] = redistest.Start(t)
		cs[i] = newLockClient(t, srvs[i], watchdog)
	}
	return srvs, cs
}

func redLockOn(cs []*rlock.Client, name string) *rlock.RedLock {
	locks := make([]rlock.Locker, len(cs))
	for i, c := range cs {
		locks[i] = c.Lock(name)
	}
	return rlock.NewRedLock(locks...)
}

func TestRedLockMajorityValidityAndExclusion(t *testing.T) {
	srvs, cs := redMasters(t, 5, 0)
	ctx := ctxT(t, 10*time.Second)
	start := time.Now()
	held, err := redLockOn(cs, "red").TryLock(ctx, 0, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The validity: lease − time spent acquiring − drift (1% of the lease + 2 ms), counted from the attempt.
	dl, ok := held.Deadline()
	if lo, hi := start.Add(2*time.Second-22*time.Millisecond), time.Now().Add(2*time.Second-22*time.Millisecond); !ok || dl.Before(lo) || dl.After(hi) {
		t.Fatalf("validity deadline %v (set %v), want within [%v, %v]", dl, ok, lo, hi)
	}
	// Held with a majority; the masters that answer later join the hold.
	for _, s := range srvs {
		eventually(t, time.Second, "every master holds the lock", func() bool {
			n, _ := s.DoInt(ctx, "EXISTS", "red")
			return n == 1
		})
	}
	// Another client set on the same masters is refused.
	others := make([]*rlock.Client, 5)
	for i, s := range srvs {
		others[i] = newLockClient(t, s, 0)
	}
	if _, err := redLockOn(others, "red").TryLock(ctx, 0, time.Second); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("second RedLock: %v", err)
	}
	if err := redLockOn(cs, "red").Unlock(held); err != nil {
		t.Fatal(err)
	}
	for i, s := range srvs {
		if n, _ := s.DoInt(ctx, "EXISTS", "red"); n != 0 {
			t.Fatalf("master %d still holds the lock after Unlock", i)
		}
	}
	if cause := doneCause(t, held, time.Second); !errors.Is(cause, rlock.ErrReleased) {
		t.Fatalf("held cause %v", cause)
	}
	// The validity ends the held context.
	held, err = redLockOn(cs, "red").TryLock(ctx, 0, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if cause := doneCause(t, held, time.Second); !errors.Is(cause, rlock.ErrLeaseExpired) {
		t.Fatalf("cause at the end of the validity %v", cause)
	}
}

func TestRedLockWorksWithTwoOfFiveMastersDown(t *testing.T) {
	srvs, cs := redMasters(t, 5, 0)
	ctx := ctxT(t, 20*time.Second)
	srvs[0].Kill()
	srvs[3].Kill()
	held, err := redLockOn(cs, "red").TryLock(ctx, 5*time.Second, 5*time.Second)
	if err != nil {
		t.Fatalf("with 2 of 5 down: %v", err)
	}
	// A third master goes down while held: Unlock releases the two left and reports the third.
	srvs[4].Kill()
	err = redLockOn(cs, "red").Unlock(held)
	if err == nil || !strings.Contains(err.Error(), "unlock") {
		t.Fatalf("Unlock with a master down: %v, want its failure reported", err)
	}
	for _, i := range []int{1, 2} {
		if n, _ := srvs[i].DoInt(ctx, "EXISTS", "red"); n != 0 {
			t.Fatalf("master %d still holds the lock", i)
		}
	}
}

func TestRedLockFailsFastWithThreeOfFiveMastersDown(t *testing.T) {
	srvs, cs := redMasters(t, 5, 0)
	ctx := ctxT(t, 20*time.Second)
	for _, i := range []int{1, 2, 4} {
		srvs[i].Kill()
	}
	start := time.Now()
	_, err := redLockOn(cs, "red").TryLock(ctx, 10*time.Second, 5*time.Second)
	var qe *rlock.QuorumError
	if !errors.Is(err, rlock.ErrNoQuorum) || !errors.As(err, &qe) {
		t.Fatalf("with 3 of 5 down: %v, want a *QuorumError", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("failed after %v of a 10 s wait: not fast", d)
	}
	if qe.Quorum != 3 || qe.Total != 5 || len(qe.Errors) < 3 {
		t.Fatalf("quorum error %+v", qe)
	}
	t.Logf("error: %v", err)
	// The two masters that were up do not keep the lock.
	for _, i := range []int{0, 3} {
		eventually(t, 2*time.Second, "lock released on a live master", func() bool {
			n, _ := srvs[i].DoInt(ctx, "EXISTS", "red")
			return n == 0
		})
	}
}

func TestRedLockWatchdogKeepsItAndLosingTheMajorityCancelsIt(t *testing.T) {
	const watchdog = time.Second // renewed every third of it: slack for a loaded machine
	srvs, cs := redMasters(t, 3, watchdog)
	ctx := ctxT(t, 10*time.Second)
	held, err := redLockOn(cs, "red").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := held.Deadline(); ok {
		t.Fatal("a watchdog RedLock has a deadline")
	}
	time.Sleep(2 * watchdog) // unrenewed, the locks would have expired after one
	if err := context.Cause(held); err != nil {
		t.Fatalf("lost while renewed: %v", err)
	}
	// Two of three masters lose the lock (deleted behind the clients' backs): the renewals find it gone.
	srvs[0].Do(ctx, "DEL", "red")
	if context.Cause(held) != nil {
		t.Fatal("cancelled with a majority still held")
	}
	srvs[2].Do(ctx, "DEL", "red")
	if cause := doneCause(t, held, 2*watchdog); !errors.Is(cause, rlock.ErrLockLost) {
		t.Fatalf("cause %v, want ErrLockLost", cause)
	}
	redLockOn(cs, "red").Unlock(held)
}

func TestRedLockContendingClientsExcludeEachOther(t *testing.T) {
	srvs, _ := redMasters(t, 3, 0)
	var inside, total atomic.Int64
	var overlap atomic.Bool
	var wg sync.WaitGroup
	ctx := ctxT(t, 60*time.Second)
	for range 4 {
		cs := make([]*rlock.Client, 3)
		for i, s := range srvs {
			cs[i] = newLockClient(t, s, 0)
		}
		rl := redLockOn(cs, "red")
		wg.Add(1)
		go func() { // owner: this test
			defer wg.Done()
			for range 5 {
				// Lock, not TryLock: RedLock is not fair (a releasing client often takes it again at once), so
				// only mutual exclusion and progress are asserted.
				held, err := rl.Lock(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					overlap.Store(true)
				}
				total.Add(1)
				inside.Add(-1)
				if err := rl.Unlock(held); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if overlap.Load() || total.Load() != 20 {
		t.Fatalf("overlap %v, %d acquisitions", overlap.Load(), total.Load())
	}
}

func TestMultiLockTakesAllOrNoneAndReleasesOnFailure(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	h2, err := b.Lock("l2").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := rlock.NewMultiLock(a.Lock("l3"), a.Lock("l1"), a.Lock("l2"))
	if _, err := m.TryLock(ctx, 200*time.Millisecond, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("with l2 held elsewhere: %v", err)
	}
	for _, name := range []string{"l1", "l3"} {
		if n, _ := srv.DoInt(ctx, "EXISTS", name); n != 0 {
			t.Fatalf("%s kept after the MultiLock failed", name)
		}
	}
	fut := m.TryLockAsync(ctx, 5*time.Second, 0)
	b.Lock("l2").Unlock(h2)
	held, err := fut.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Re-entry with the held context, and two unlocks.
	if again, err := m.Lock(held); err != nil || again != held {
		t.Fatalf("re-entry: %v", err)
	}
	for _, name := range []string{"l1", "l2", "l3"} {
		h, _ := srv.DoMap(ctx, "HGETALL", name)
		for owner, count := range h {
			if count != "2" {
				t.Fatalf("%s held %s times by %s after a re-entry, want 2", name, count, owner)
			}
		}
	}
	m.Unlock(held)
	if context.Cause(held) != nil {
		t.Fatal("released after the first of two unlocks")
	}
	if err := m.Unlock(held); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(held); !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("third unlock: %v", err)
	}
	for _, name := range []string{"l1", "l2", "l3"} {
		if n, _ := srv.DoInt(ctx, "EXISTS", name); n != 0 {
			t.Fatalf("%s held after the final unlock", name)
		}
	}
}

func TestMultiLocksInOppositeOrdersDoNotDeadlock(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ma := rlock.NewMultiLock(a.Lock("x"), a.Lock("y"), a.Lock("z"))
	mb := rlock.NewMultiLock(b.Lock("z"), b.Lock("y"), b.Lock("x"))
	ctx := ctxT(t, 20*time.Second)
	var inside atomic.Int64
	var overlap atomic.Bool
	var wg sync.WaitGroup
	for _, m := range []*rlock.MultiLock{ma, mb, ma, mb} {
		wg.Add(1)
		go func() { // owner: this test
			defer wg.Done()
			for range 20 {
				held, err := m.Lock(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					overlap.Store(true)
				}
				inside.Add(-1)
				if err := m.Unlock(held); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if overlap.Load() {
		t.Fatal("two MultiLocks over the same locks held at once")
	}
}

func TestMultiLockLosingOneLockCancelsIt(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	m := rlock.NewMultiLock(c.Lock("m1"), c.FairLock("m2"))
	held, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.FairLock("m2").ForceUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if cause := doneCause(t, held, time.Second); !errors.Is(cause, rlock.ErrLockLost) {
		t.Fatalf("cause %v", cause)
	}
	err = m.Unlock(held)
	if !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("Unlock after a loss: %v, want the lost lock's ErrNotHeld reported", err)
	}
	if n, _ := srv.DoInt(ctx, "EXISTS", "m1"); n != 0 {
		t.Fatal("the lock still held was not released")
	}
}

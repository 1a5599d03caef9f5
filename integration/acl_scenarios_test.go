package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// aclScenario drives every operation of one object kind through two clients of the same Redis user (a and b
// stand for two processes), so that whatever the kind sends — uncontended and contended acquires, waits woken by
// another client's release, hand-offs, renewals, queries, force unlocks, waiters giving up — is sent at least
// once. Each kind's minimal ACL (docs/acl.md) must let all of it through.
// renewed waits until the watchdog renewed a lock once more (the clients' Observer reports it).
type aclScenario func(t *testing.T, ctx context.Context, a, b *rlock.Client, name string, renewed func())

// aclScenarios are the scenarios by the kind names docs/acl.md uses.
var aclScenarios = map[string]aclScenario{
	"Lock":                     aclLockScenario,
	"FairLock":                 aclFairLockScenario,
	"FencedLock":               aclFencedLockScenario,
	"ReadWriteLock":            aclReadWriteLockScenario,
	"Semaphore":                aclSemaphoreScenario,
	"PermitExpirableSemaphore": aclPermitSemaphoreScenario,
	"CountDownLatch":           aclLatchScenario,
	"RateLimiter":              aclRateLimiterScenario,
	"FixedWindowLimiter":       aclFixedWindowScenario,
}

// aclWatchdog is the scenarios' watchdog timeout: short, so that renewals run while the locks are held, and
// long enough that a scheduling stall of a loaded machine does not let a lease run out between two renewals.
const aclWatchdog = time.Second

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waited runs wait on another goroutine and returns a function that waits for its result.
func waited(wait func() error) func() error {
	done := make(chan error, 1)
	go func() { done <- wait() }()
	return func() error { return <-done }
}

func aclLockScenario(t *testing.T, ctx context.Context, a, b *rlock.Client, name string, renewed func()) {
	la, lb := a.Lock(name), b.Lock(name)
	held, err := la.Lock(ctx)
	must(t, "Lock", err)
	_, err = la.Lock(held) // re-entry
	must(t, "re-entry", err)
	if _, err := lb.TryLock(ctx, 0, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryLock of a held lock = %v", err)
	}
	if _, err := lb.TryLock(ctx, 50*time.Millisecond, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryLock with a wait = %v", err) // queued, then left
	}
	bHeld := waited(func() error {
		h, err := lb.Lock(ctx) // queued: granted by a's release (the hand-off across clients)
		if err == nil {
			renewed()
			err = lb.Unlock(h)
		}
		return err
	})
	waitQueued(t, a, b)
	renewed() // a's hold
	must(t, "Unlock (one hold)", la.Unlock(held))
	must(t, "Unlock", la.Unlock(held))
	must(t, "the waiter's Lock and Unlock", bHeld())
	lockQueries(t, ctx, la, lb)
}

// waitQueued waits until b has a waiter (a's side of the scenario is then contended).
func waitQueued(t *testing.T, _ *rlock.Client, b *rlock.Client) {
	t.Helper()
	eventually(t, 10*time.Second, "a waiter", func() bool { return b.Stats().Waiters > 0 })
}

// lockQueries runs the plain lock's queries and force unlock, with a held lock.
func lockQueries(t *testing.T, ctx context.Context, la, lb *rlock.Lock) {
	held, err := la.LockLease(ctx, time.Minute)
	must(t, "LockLease", err)
	_, err = lb.IsLocked(ctx)
	must(t, "IsLocked", err)
	_, err = la.IsHeldBy(held)
	must(t, "IsHeldBy", err)
	_, err = la.HoldCount(held)
	must(t, "HoldCount", err)
	_, err = lb.RemainTimeToLive(ctx)
	must(t, "RemainTimeToLive", err)
	_, err = lb.Status(ctx)
	must(t, "Status", err)
	_, err = lb.ForceUnlock(ctx)
	must(t, "ForceUnlock", err)
}

func aclFairLockScenario(t *testing.T, ctx context.Context, a, b *rlock.Client, name string, renewed func()) {
	la, lb := a.FairLock(name), b.FairLock(name)
	held, err := la.Lock(ctx)
	must(t, "Lock", err)
	if _, err := lb.TryLock(ctx, 50*time.Millisecond, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryLock with a wait = %v", err)
	}
	bHeld := waited(func() error {
		h, err := lb.Lock(ctx)
		if err == nil {
			err = lb.Unlock(h)
		}
		return err
	})
	waitQueued(t, a, b)
	_, err = la.QueueLength(ctx)
	must(t, "QueueLength", err)
	renewed()
	must(t, "Unlock", la.Unlock(held))
	must(t, "the waiter's Lock and Unlock", bHeld())
	held, err = la.LockLease(ctx, time.Minute)
	must(t, "LockLease", err)
	_, err = lb.IsLocked(ctx)
	must(t, "IsLocked", err)
	_, err = la.HoldCount(held)
	must(t, "HoldCount", err)
	_, err = lb.RemainTimeToLive(ctx)
	must(t, "RemainTimeToLive", err)
	_, err = lb.ForceUnlock(ctx)
	must(t, "ForceUnlock", err)
}

func aclFencedLockScenario(t *testing.T, ctx context.Context, a, b *rlock.Client, name string, renewed func()) {
	la, lb := a.FencedLock(name), b.FencedLock(name)
	held, _, err := la.Lock(ctx)
	must(t, "Lock", err)
	if _, _, err := lb.TryLock(ctx, 50*time.Millisecond, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryLock with a wait = %v", err)
	}
	bHeld := waited(func() error {
		h, _, err := lb.Lock(ctx)
		if err == nil {
			err = lb.Unlock(h)
		}
		return err
	})
	waitQueued(t, a, b)
	renewed()
	must(t, "Unlock", la.Unlock(held))
	must(t, "the waiter's Lock and Unlock", bHeld())
	_, err = lb.Token(ctx)
	must(t, "Token", err)
	held, _, err = la.LockLease(ctx, time.Minute)
	must(t, "LockLease", err)
	_, err = lb.IsLocked(ctx)
	must(t, "IsLocked", err)
	_, err = la.HoldCount(held)
	must(t, "HoldCount", err)
	_, err = lb.RemainTimeToLive(ctx)
	must(t, "RemainTimeToLive", err)
	_, err = lb.ForceUnlock(ctx)
	must(t, "ForceUnlock", err)
}

func aclReadWriteLockScenario(t *testing.T, ctx context.Context, a, b *rlock.Client, name string, renewed func()) {
	rwa, rwb := a.ReadWriteLock(name), b.ReadWriteLock(name)
	read, err := rwa.ReadLock().Lock(ctx)
	must(t, "ReadLock", err)
	_, err = rwa.ReadLock().Lock(read) // two read holds
	must(t, "ReadLock re-entry", err)
	bHeld := waited(func() error {
		h, err := rwb.WriteLock().Lock(ctx) // waits for the readers
		if err == nil {
			err = rwb.WriteLock().Unlock(h)
		}
		return err
	})
	waitQueued(t, a, b)
	renewed()
	must(t, "ReadLock.Unlock", rwa.ReadLock().Unlock(read))
	must(t, "ReadLock.Unlock", rwa.ReadLock().Unlock(read))
	must(t, "the writer's Lock and Unlock", bHeld())
	write, err := rwa.WriteLock().Lock(ctx)
	must(t, "WriteLock", err)
	rHeld := waited(func() error {
		h, err := rwb.ReadLock().Lock(ctx) // woken by the write unlock
		if err == nil {
			err = rwb.ReadLock().Unlock(h)
		}
		return err
	})
	waitQueued(t, a, b)
	must(t, "WriteLock.Unlock", rwa.WriteLock().Unlock(write))
	must(t, "the reader's Lock and Unlock", rHeld())
	write, err = rwa.WriteLock().LockLease(ctx, time.Minute)
	must(t, "WriteLock.LockLease", err)
	_, err = rwa.WriteLock().HoldCount(write)
	must(t, "WriteLock.HoldCount", err)
	_, err = rwb.Mode(ctx)
	must(t, "Mode", err)
	_, err = rwb.Status(ctx)
	must(t, "Status", err)
	_, err = rwb.RemainTimeToLive(ctx)
	must(t, "RemainTimeToLive", err)
	_, err = rwb.WriteLock().ForceUnlock(ctx)
	must(t, "WriteLock.ForceUnlock", err)
	_, err = rwa.ReadLock().LockLease(ctx, time.Minute)
	must(t, "ReadLock.LockLease", err)
	_, err = rwb.ReadLock().ForceUnlock(ctx)
	must(t, "ReadLock.ForceUnlock", err)
	_, err = rwb.ForceUnlock(ctx)
	must(t, "ForceUnlock", err)
}

func aclSemaphoreScenario(t *testing.T, ctx context.Context, a, b *rlock.Client, name string, renewed func()) {
	sa, sb := a.Semaphore(name), b.Semaphore(name)
	_, err := sa.TrySetPermits(ctx, 1)
	must(t, "TrySetPermits", err)
	must(t, "Acquire", sa.Acquire(ctx, 1))
	bGot := waited(func() error { return sb.Acquire(ctx, 1) })
	waitQueued(t, a, b)
	must(t, "Release", sa.Release(ctx, 1))
	must(t, "the waiter's Acquire", bGot())
	_, err = sb.TryAcquire(ctx, 1, 10*time.Millisecond)
	must(t, "TryAcquire", err)
	_, err = sb.AddPermits(ctx, 2)
	must(t, "AddPermits", err)
	_, err = sb.AvailablePermits(ctx)
	must(t, "AvailablePermits", err)
	_, err = sb.DrainPermits(ctx)
	must(t, "DrainPermits", err)
	_, err = a.Semaphore(name+"-ttl").TrySetPermitsTTL(ctx, 1, time.Minute)
	must(t, "TrySetPermitsTTL", err)
}

func aclPermitSemaphoreScenario(t *testing.T, ctx context.Context, a, b *rlock.Client, name string, renewed func()) {
	sa, sb := a.PermitExpirableSemaphore(name), b.PermitExpirableSemaphore(name)
	_, err := sa.TrySetPermits(ctx, 1)
	must(t, "TrySetPermits", err)
	id, err := sa.Acquire(ctx, time.Minute)
	must(t, "Acquire", err)
	must(t, "UpdateLease", sa.UpdateLease(ctx, id, time.Minute))
	bGot := waited(func() error {
		id, err := sb.Acquire(ctx, 0)
		if err == nil {
			err = sb.Release(ctx, id)
		}
		return err
	})
	waitQueued(t, a, b)
	must(t, "Release", sa.Release(ctx, id))
	must(t, "the waiter's Acquire and Release", bGot())
	_, err = sb.TryAcquire(ctx, 10*time.Millisecond, 20*time.Millisecond) // its lease runs out: reclaimed
	must(t, "TryAcquire", err)
	_, err = sb.AddPermits(ctx, 1)
	must(t, "AddPermits", err)
	_, _, err = sb.Permits(ctx)
	must(t, "Permits", err)
}

func aclLatchScenario(t *testing.T, ctx context.Context, a, b *rlock.Client, name string, renewed func()) {
	la, lb := a.CountDownLatch(name), b.CountDownLatch(name)
	_, err := la.TrySetCount(ctx, 1)
	must(t, "TrySetCount", err)
	bDone := waited(func() error { return lb.Await(ctx) })
	waitQueued(t, a, b)
	_, err = la.Count(ctx)
	must(t, "Count", err)
	_, err = la.CountDown(ctx)
	must(t, "CountDown", err)
	must(t, "the waiter's Await", bDone())
	_, err = lb.AwaitTimeout(ctx, time.Millisecond)
	must(t, "AwaitTimeout", err)
	_, err = la.TrySetCount(ctx, 1)
	must(t, "TrySetCount", err)
	_, err = la.Delete(ctx)
	must(t, "Delete", err)
}

func aclRateLimiterScenario(t *testing.T, ctx context.Context, a, b *rlock.Client, name string, renewed func()) {
	ra, rb := a.RateLimiter(name), b.RateLimiter(name)
	_, err := ra.TrySetRate(ctx, rlock.RateConfig{Rate: 1, Interval: 100 * time.Millisecond})
	must(t, "TrySetRate", err)
	must(t, "Acquire", ra.Acquire(ctx, 1))
	must(t, "Acquire (waits)", rb.Acquire(ctx, 1))
	_, err = rb.TryAcquire(ctx, 1, 0)
	must(t, "TryAcquire", err)
	_, err = rb.AvailablePermits(ctx)
	must(t, "AvailablePermits", err)
	_, err = rb.Config(ctx)
	must(t, "Config", err)
	must(t, "SetRate", ra.SetRate(ctx, rlock.RateConfig{Type: rlock.RatePerClient, Rate: 2, Interval: 100 * time.Millisecond,
		KeepAlive: time.Minute}))
	must(t, "Acquire per client", ra.Acquire(ctx, 1))
}

func aclFixedWindowScenario(t *testing.T, ctx context.Context, a, b *rlock.Client, name string, renewed func()) {
	la, lb := a.FixedWindowLimiter(name, 1, 100*time.Millisecond), b.FixedWindowLimiter(name, 1, 100*time.Millisecond)
	must(t, "Acquire", la.Acquire(ctx, 1))
	must(t, "Acquire (waits)", lb.Acquire(ctx, 1))
	_, err := lb.TryAcquire(ctx, 1, 0)
	must(t, "TryAcquire", err)
	_, err = lb.Available(ctx)
	must(t, "Available", err)
}

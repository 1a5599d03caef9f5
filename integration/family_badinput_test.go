package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

func TestFamilyRejectsBadInputWithTypedErrorsBeforeSendingAnything(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	validID := "00112233445566778899aabbccddeeff"

	cases := []struct {
		name string
		call func() error
	}{
		// Locks.
		{"FairLock empty name", func() error { _, err := c.FairLock("").Lock(ctx); return err }},
		{"FairLock negative wait", func() error { _, err := c.FairLock("f").TryLock(ctx, -time.Second, 0); return err }},
		{"FairLock zero lease", func() error { _, err := c.FairLock("f").LockLease(ctx, 0); return err }},
		{"FairLock sub-millisecond lease", func() error { _, err := c.FairLock("f").TryLock(ctx, 0, time.Microsecond); return err }},
		{"FairLock negative lease async", func() error { _, err := c.FairLock("f").TryLockAsync(ctx, 0, -time.Second).Get(ctx); return err }},
		{"FencedLock zero lease", func() error { _, _, err := c.FencedLock("x").LockLease(ctx, 0); return err }},
		{"FencedLock negative wait", func() error { _, _, err := c.FencedLock("x").TryLock(ctx, -1, 0); return err }},
		{"FencedLock malformed owner", func() error {
			_, _, err := c.FencedLock("x").Lock(rlock.WithOwner(ctx, "not-a-number"))
			return err
		}},
		{"ReadLock negative lease", func() error { _, err := c.ReadWriteLock("rw").ReadLock().TryLock(ctx, 0, -time.Second); return err }},
		{"WriteLock zero lease", func() error { _, err := c.ReadWriteLock("rw").WriteLock().LockLease(ctx, 0); return err }},
		{"ReadWriteLock empty name", func() error { _, err := c.ReadWriteLock("").Mode(ctx); return err }},
		// Multi and RedLock.
		{"MultiLock no locks", func() error { _, err := rlock.NewMultiLock().TryLock(ctx, 0, 0); return err }},
		{"MultiLock nil lock", func() error { _, err := rlock.NewMultiLock(c.Lock("a"), nil).Lock(ctx); return err }},
		{"MultiLock typed nil first", func() error {
			_, err := rlock.NewMultiLock((*rlock.Lock)(nil), c.Lock("a")).Lock(ctx)
			return err
		}},
		{"RedLock nil first", func() error { _, err := rlock.NewRedLock(nil, c.Lock("a")).Lock(ctx); return err }},
		{"RedLock negative lease", func() error { _, err := rlock.NewRedLock(c.Lock("a")).TryLock(ctx, 0, -time.Second); return err }},
		{"RedLock negative wait", func() error { _, err := rlock.NewRedLock(c.Lock("a")).TryLock(ctx, -time.Second, 0); return err }},
		// Semaphore.
		{"Semaphore acquire zero", func() error { return c.Semaphore("s").Acquire(ctx, 0) }},
		{"Semaphore acquire negative", func() error { return c.Semaphore("s").Acquire(ctx, -2) }},
		{"Semaphore try zero", func() error { _, err := c.Semaphore("s").TryAcquire(ctx, 0, time.Second); return err }},
		{"Semaphore try negative wait", func() error { _, err := c.Semaphore("s").TryAcquire(ctx, 1, -time.Second); return err }},
		{"Semaphore release zero", func() error { return c.Semaphore("s").Release(ctx, 0) }},
		{"Semaphore release negative", func() error { return c.Semaphore("s").Release(ctx, -1) }},
		{"Semaphore set negative", func() error { _, err := c.Semaphore("s").TrySetPermits(ctx, -1); return err }},
		{"Semaphore add zero", func() error { _, err := c.Semaphore("s").AddPermits(ctx, 0); return err }},
		{"Semaphore empty name", func() error { _, err := c.Semaphore("").AvailablePermits(ctx); return err }},
		// Permit-expirable semaphore.
		{"PermitSemaphore acquire zero", func() error { _, err := c.PermitExpirableSemaphore("p").AcquireN(ctx, 0, 0); return err }},
		{"PermitSemaphore negative lease", func() error { _, err := c.PermitExpirableSemaphore("p").Acquire(ctx, -time.Second); return err }},
		{"PermitSemaphore negative wait", func() error { _, err := c.PermitExpirableSemaphore("p").TryAcquire(ctx, -1, 0); return err }},
		{"PermitSemaphore malformed id", func() error { return c.PermitExpirableSemaphore("p").Release(ctx, "not-hex") }},
		{"PermitSemaphore short id", func() error { return c.PermitExpirableSemaphore("p").Release(ctx, "0011") }},
		{"PermitSemaphore no ids", func() error { return c.PermitExpirableSemaphore("p").Release(ctx) }},
		{"PermitSemaphore update malformed id", func() error { return c.PermitExpirableSemaphore("p").UpdateLease(ctx, "zz", time.Second) }},
		{"PermitSemaphore update negative lease", func() error { return c.PermitExpirableSemaphore("p").UpdateLease(ctx, validID, -1) }},
		{"PermitSemaphore set negative", func() error { _, err := c.PermitExpirableSemaphore("p").TrySetPermits(ctx, -3); return err }},
		// Latch.
		{"Latch zero count", func() error { _, err := c.CountDownLatch("l").TrySetCount(ctx, 0); return err }},
		{"Latch negative count", func() error { _, err := c.CountDownLatch("l").TrySetCount(ctx, -1); return err }},
		{"Latch negative timeout", func() error { _, err := c.CountDownLatch("l").AwaitTimeout(ctx, -time.Second); return err }},
		// Rate limiters.
		{"RateLimiter zero rate", func() error {
			_, err := c.RateLimiter("r").TrySetRate(ctx, rlock.RateConfig{Rate: 0, Interval: time.Second})
			return err
		}},
		{"RateLimiter negative rate", func() error {
			return c.RateLimiter("r").SetRate(ctx, rlock.RateConfig{Rate: -5, Interval: time.Second})
		}},
		{"RateLimiter zero interval", func() error {
			_, err := c.RateLimiter("r").TrySetRate(ctx, rlock.RateConfig{Rate: 1})
			return err
		}},
		{"RateLimiter keep-alive below interval", func() error {
			_, err := c.RateLimiter("r").TrySetRate(ctx, rlock.RateConfig{Rate: 1, Interval: time.Second, KeepAlive: time.Millisecond})
			return err
		}},
		{"RateLimiter unknown type", func() error {
			_, err := c.RateLimiter("r").TrySetRate(ctx, rlock.RateConfig{Type: 7, Rate: 1, Interval: time.Second})
			return err
		}},
		{"RateLimiter zero permits", func() error { _, err := c.RateLimiter("r").TryAcquire(ctx, 0, 0); return err }},
		{"RateLimiter negative permits", func() error { return c.RateLimiter("r").Acquire(ctx, -1) }},
		{"RateLimiter permits over 32 bits", func() error { return c.RateLimiter("r").Acquire(ctx, 1<<33) }},
		{"FixedWindow zero limit", func() error { _, err := c.FixedWindowLimiter("w", 0, time.Second).TryAcquire(ctx, 1, 0); return err }},
		{"FixedWindow zero window", func() error { _, err := c.FixedWindowLimiter("w", 1, 0).TryAcquire(ctx, 1, 0); return err }},
		{"FixedWindow zero permits", func() error { return c.FixedWindowLimiter("w", 1, time.Second).Acquire(ctx, 0) }},
		{"Unlock without an owner", func() error { return c.FairLock("f").Unlock(context.Background()) }},
	}
	before := commandCounts(t, srv)
	for _, tc := range cases {
		err := tc.call()
		var ae *rlock.ArgumentError
		switch {
		case tc.name == "Unlock without an owner":
			if !errors.Is(err, rlock.ErrNotHeld) {
				t.Errorf("%s: %v, want ErrNotHeld", tc.name, err)
			}
		case !errors.Is(err, rlock.ErrInvalidArgument) || !errors.As(err, &ae):
			t.Errorf("%s: %v, want an *ArgumentError", tc.name, err)
		}
	}
	after := commandCounts(t, srv)
	if sent := commandsSince(before, after); sent != "" {
		t.Fatalf("bad input sent commands to the server: %s", sent)
	}
	// The count does see the family's commands.
	if _, err := c.Semaphore("s").AvailablePermits(ctx); err != nil {
		t.Fatal(err)
	}
	if commandsSince(after, commandCounts(t, srv)) == "" {
		t.Fatal("a valid call was not counted: the check above proves nothing")
	}
}

func TestFamilyReportsServerSideRefusalsWithTypedErrors(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	pes := c.PermitExpirableSemaphore("p")
	pes.TrySetPermits(ctx, 1)
	if err := pes.Release(ctx, "00112233445566778899aabbccddeeff"); !errors.Is(err, rlock.ErrPermitNotFound) {
		t.Fatalf("unknown permit id: %v", err)
	}
	if err := pes.UpdateLease(ctx, "00112233445566778899aabbccddeeff", time.Second); !errors.Is(err, rlock.ErrPermitNotFound) {
		t.Fatalf("unknown permit id: %v", err)
	}
	if _, err := c.RateLimiter("never-set").AvailablePermits(ctx); !errors.Is(err, rlock.ErrRateNotSet) {
		t.Fatalf("rate never set: %v", err)
	}
	c.RateLimiter("r").TrySetRate(ctx, rlock.RateConfig{Rate: 2, Interval: time.Second})
	if _, err := c.RateLimiter("r").TryAcquire(ctx, 3, time.Second); !errors.Is(err, rlock.ErrRateExceeded) {
		t.Fatalf("permits over the rate: %v", err)
	}
	if err := c.FencedLock("x").Unlock(rlock.WithOwner(ctx, "42")); !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("unlock of a lock never taken: %v", err)
	}
}

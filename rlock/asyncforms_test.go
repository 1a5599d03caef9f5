package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// The async forms added so that every call of the locks has one answer as their blocking forms do.
func TestLockFamilyAsyncForms(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	fair := c.FairLock("fair")
	fenced := c.FencedLock("fenced")
	for _, q := range []struct {
		name     string
		lock     func() (context.Context, error)
		locked   func() (bool, error)
		heldBy   func(context.Context) (bool, error)
		count    func(context.Context) (int, error)
		ttl      func() (time.Duration, error)
		force    func() (bool, error)
		unlocked func(context.Context) error
	}{
		{"FairLock",
			func() (context.Context, error) { return fair.LockLease(ctx, time.Minute) },
			func() (bool, error) { return fair.IsLockedAsync(ctx).Get(ctx) },
			func(h context.Context) (bool, error) { return fair.IsHeldByAsync(h).Get(ctx) },
			func(h context.Context) (int, error) { return fair.HoldCountAsync(h).Get(ctx) },
			func() (time.Duration, error) { return fair.RemainTimeToLiveAsync(ctx).Get(ctx) },
			func() (bool, error) { return fair.ForceUnlockAsync(ctx).Get(ctx) },
			func(h context.Context) error { _, err := fair.UnlockAsync(h).Get(ctx); return err }},
		{"FencedLock",
			func() (context.Context, error) { h, _, err := fenced.LockLease(ctx, time.Minute); return h, err },
			func() (bool, error) { return fenced.IsLockedAsync(ctx).Get(ctx) },
			func(h context.Context) (bool, error) { return fenced.IsHeldByAsync(h).Get(ctx) },
			func(h context.Context) (int, error) { return fenced.HoldCountAsync(h).Get(ctx) },
			func() (time.Duration, error) { return fenced.RemainTimeToLiveAsync(ctx).Get(ctx) },
			func() (bool, error) { return fenced.ForceUnlockAsync(ctx).Get(ctx) },
			func(h context.Context) error { _, err := fenced.UnlockAsync(h).Get(ctx); return err }},
	} {
		held, err := q.lock()
		must(q.name+" lock", err)
		locked, err := q.locked()
		must(q.name+" IsLockedAsync", err)
		by, err := q.heldBy(held)
		must(q.name+" IsHeldByAsync", err)
		n, err := q.count(held)
		must(q.name+" HoldCountAsync", err)
		ttl, err := q.ttl()
		must(q.name+" RemainTimeToLiveAsync", err)
		if !locked || !by || n != 1 || ttl <= 50*time.Second {
			t.Errorf("%s while held: locked %v, held by %v, count %d, ttl %v", q.name, locked, by, n, ttl)
		}
		must(q.name+" UnlockAsync", q.unlocked(held))
		if ttl, err := q.ttl(); err != nil || ttl != TTLNoKey {
			t.Errorf("%s RemainTimeToLiveAsync after unlock = %v, %v", q.name, FormatTTL(ttl), err)
		}
		_, err = q.lock()
		must(q.name+" lock again", err)
		if ok, err := q.force(); err != nil || !ok {
			t.Errorf("%s ForceUnlockAsync = %v, %v", q.name, ok, err)
		}
	}

	rw := c.ReadWriteLock("rw")
	held, err := rw.WriteLock().LockLease(ctx, time.Minute)
	must("WriteLock", err)
	if ok, err := rw.WriteLock().IsLockedAsync(ctx).Get(ctx); err != nil || !ok {
		t.Errorf("WriteLock.IsLockedAsync = %v, %v", ok, err)
	}
	if n, err := rw.WriteLock().HoldCountAsync(held).Get(ctx); err != nil || n != 1 {
		t.Errorf("WriteLock.HoldCountAsync = %v, %v", n, err)
	}
	if m, err := rw.ModeAsync(ctx).Get(ctx); err != nil || m != "write" {
		t.Errorf("ReadWriteLock.ModeAsync = %q, %v", m, err)
	}
	if st, err := rw.StatusAsync(ctx).Get(ctx); err != nil || !st.Locked || st.Mode != "write" {
		t.Errorf("ReadWriteLock.StatusAsync = %v, %v", st, err)
	}
	if ttl, err := rw.RemainTimeToLiveAsync(ctx).Get(ctx); err != nil || ttl <= 50*time.Second {
		t.Errorf("ReadWriteLock.RemainTimeToLiveAsync = %v, %v", ttl, err)
	}
	read, err := rw.ReadLock().Lock(held) // a downgrade: the writer may read
	must("ReadLock", err)
	if n, err := rw.ReadLock().HoldCountAsync(read).Get(ctx); err != nil || n != 1 {
		t.Errorf("ReadLock.HoldCountAsync = %v, %v", n, err)
	}
	if ok, err := rw.ForceUnlockAsync(ctx).Get(ctx); err != nil || !ok {
		t.Errorf("ReadWriteLock.ForceUnlockAsync = %v, %v", ok, err)
	}
	if n, err := fair.QueueLengthAsync(ctx).Get(ctx); err != nil || n != 0 {
		t.Errorf("FairLock.QueueLengthAsync = %v, %v", n, err)
	}

	for _, m := range []struct {
		name string
		lock func() (context.Context, error)
		free func(context.Context) error
	}{
		{"MultiLock", func() (context.Context, error) {
			return NewMultiLock(c.Lock("m1"), c.Lock("m2")).LockLeaseAsync(ctx, time.Minute).Get(ctx)
		}, func(h context.Context) error { return NewMultiLock(c.Lock("m1"), c.Lock("m2")).Unlock(h) }},
		{"RedLock", func() (context.Context, error) {
			return NewRedLock(c.Lock("r1"), c.Lock("r2"), c.Lock("r3")).LockLeaseAsync(ctx, time.Minute).Get(ctx)
		}, func(h context.Context) error { return NewRedLock(c.Lock("r1"), c.Lock("r2"), c.Lock("r3")).Unlock(h) }},
	} {
		held, err := m.lock()
		must(m.name+" LockLeaseAsync", err)
		if d, ok := held.Deadline(); !ok || time.Until(d) <= 50*time.Second {
			t.Errorf("%s LockLeaseAsync: deadline %v, %v; want about a minute away", m.name, d, ok)
		}
		must(m.name+" Unlock", m.free(held))
	}
	if _, err := NewMultiLock(c.Lock("m1")).LockLeaseAsync(ctx, 0).Get(ctx); err == nil {
		t.Error("MultiLock.LockLeaseAsync with lease 0 succeeded; want an *ArgumentError")
	}
}

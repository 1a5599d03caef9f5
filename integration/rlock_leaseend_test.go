package integration

import (
	"context"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// LeaseEnd never comes after the moment the server may let another owner in: a fixed lease's end is counted from
// before the acquire was sent, and a lock handed over by another holder's release from before that release ran
// (the server arms the waiter's lease when it runs). A watchdog lock reports its current end; there is none once
// the lock is released, for a MultiLock's held context, or for a context that holds nothing.
func TestLeaseEndNeverComesAfterTheServersEnd(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 30*time.Second)
	const lease = 2 * time.Second
	l := c.Lock("lease-end")

	before := time.Now()
	a, err := l.TryLock(ctx, 0, lease)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	end, ok := rlock.LeaseEnd(a)
	if !ok || end.After(after.Add(lease)) || end.Before(before.Add(lease-lease/10)) {
		t.Fatalf("LeaseEnd = %v, %v: want within (%v, %v] of the acquire's start", end.Sub(before), ok,
			lease-lease/10, after.Sub(before)+lease)
	}

	// A waiter with its own fixed lease, granted by a's release.
	waiting := make(chan error, 1)
	var b context.Context
	go func() {
		var err error
		b, err = l.LockLease(ctx, lease)
		waiting <- err
	}()
	eventually(t, 5*time.Second, "the second acquire waiting", func() bool { return c.Stats().Waiters == 1 })
	releaseStart := time.Now()
	mustUnlock(t, l, a)
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	if _, ok := rlock.LeaseEnd(a); ok {
		t.Fatal("LeaseEnd reports a lease for a released lock")
	}
	end, ok = rlock.LeaseEnd(b)
	if !ok || end.After(releaseStart.Add(lease)) {
		t.Fatalf("LeaseEnd of the handed-over lock = %v after the release started, %v: want at most the lease %v",
			end.Sub(releaseStart), ok, lease)
	}
	mustUnlock(t, l, b)

	// A watchdog lock: the end of its current lease.
	w := mustLock(t, l, ctx)
	first, ok := rlock.LeaseEnd(w)
	if !ok || time.Until(first) > rlock.DefaultWatchdogTimeout {
		t.Fatalf("LeaseEnd of a watchdog lock in %v, %v: want within the watchdog timeout", time.Until(first), ok)
	}
	mustUnlock(t, l, w)

	m := rlock.NewMultiLock(c.Lock("lease-end-1"), c.Lock("lease-end-2"))
	mh, err := m.TryLock(ctx, 0, lease)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rlock.LeaseEnd(mh); ok {
		t.Fatal("LeaseEnd reports one lease for a MultiLock's held context")
	}
	if err := m.Unlock(mh); err != nil {
		t.Fatal(err)
	}
	for _, none := range []context.Context{nil, ctx, rlock.WithOwner(ctx, "1")} {
		if _, ok := rlock.LeaseEnd(none); ok {
			t.Fatalf("LeaseEnd(%v) reports a lease", none)
		}
	}
}

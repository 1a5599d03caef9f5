package rlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// The forms of MultiLock and RedLock that callers use besides Lock, TryLock and Unlock — LockAsync, LockLease,
// TryLockAsync and UnlockAsync — against real servers: what each holds on the server, when its held context ends,
// and a waiter that a release elsewhere lets through.

// setCtx bounds a test of the sets.
func setCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// heldBy checks that key on srv is held once by owner.
func heldBy(t *testing.T, srv *redistest.Server, key, owner string) {
	t.Helper()
	m, err := srv.DoMap(context.Background(), "HGETALL", key)
	if err != nil || len(m) != 1 || m[owner] != "1" {
		t.Fatalf("%s on %s: %v, %v; want {%s: 1}", key, srv.Addr(), m, err, owner)
	}
}

// heldOnServer checks that key on srv is held once by owner, with a PTTL in (lease - 1 s, lease].
func heldOnServer(t *testing.T, srv *redistest.Server, key, owner string, lease time.Duration) {
	t.Helper()
	heldBy(t, srv, key, owner)
	ttl, _ := srv.DoInt(context.Background(), "PTTL", key)
	if ttl > lease.Milliseconds() || ttl <= (lease-time.Second).Milliseconds() {
		t.Fatalf("%s on %s: PTTL %d ms, want the lease of %v", key, srv.Addr(), ttl, lease)
	}
}

// freeOnServer waits until key is gone from srv (a release in flight completes).
func freeOnServer(t *testing.T, srv *redistest.Server, key string) {
	t.Helper()
	waitFor(t, func() bool {
		n, err := srv.DoInt(context.Background(), "EXISTS", key)
		return err == nil && n == 0
	})
}

// validUntil checks that held's deadline is the validity of a set taken with lease: about lease from now, never
// later.
func validUntil(t *testing.T, held context.Context, lease time.Duration) {
	t.Helper()
	d, ok := held.Deadline()
	if left := time.Until(d); !ok || left > lease || left < lease-time.Second {
		t.Fatalf("held context's deadline %v (in %v), %v; want the validity, within %v", d, time.Until(d), ok, lease)
	}
}

// releasedBy waits for held to end and checks that the release ended it.
func releasedBy(t *testing.T, what string, held context.Context) {
	t.Helper()
	select {
	case <-held.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the held context did not end", what)
	}
	if cause := context.Cause(held); !errors.Is(cause, ErrReleased) {
		t.Fatalf("%s: the held context ended with %v, want ErrReleased", what, cause)
	}
}

func TestMultiLockLockLeaseAndUnlockAsync(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	ctx := setCtx(t)
	m := NewMultiLock(c.Lock("mf:b"), c.Lock("mf:a"))

	const lease = 5 * time.Second
	held, err := m.LockLease(ctx, lease)
	if err != nil {
		t.Fatalf("LockLease: %v", err)
	}
	owner, ok := OwnerOf(held)
	if !ok {
		t.Fatal("OwnerOf(held) reports no owner")
	}
	for _, k := range []string{"mf:a", "mf:b"} {
		heldOnServer(t, srv, k, owner, lease)
	}
	validUntil(t, held, lease)
	if s := fmt.Sprint(held); !strings.Contains(s, "rlock.Held(MultiLock)") {
		t.Fatalf("the held context prints as %q, want it to name the MultiLock", s)
	}
	// The set's hold is the held context's parent, never cancelled itself: the held context above it is.
	h := m.s.holdOf(held)
	if h == nil {
		t.Fatal("the held context carries no hold of the set")
	}
	if err := h.Err(); err != nil {
		t.Fatalf("the set's hold reports %v while held; it is never cancelled", err)
	}

	if _, err := m.UnlockAsync(held).Get(ctx); err != nil {
		t.Fatalf("UnlockAsync: %v", err)
	}
	releasedBy(t, "MultiLock.UnlockAsync", held)
	if h.Err() != nil {
		t.Fatalf("the set's hold reports %v after the release; the held context carries the end", h.Err())
	}
	for _, k := range []string{"mf:a", "mf:b"} {
		freeOnServer(t, srv, k)
	}
	if _, err := m.UnlockAsync(held).Get(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("UnlockAsync again = %v, want ErrNotHeld", err)
	}
}

func TestMultiLockLockAsyncWaitsForEveryLock(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	ctx := setCtx(t)
	m := NewMultiLock(c.Lock("mw:a"), c.Lock("mw:b"))

	// Another owner holds one of the locks: the MultiLock waits for it.
	other, err := c.Lock("mw:b").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := m.LockAsync(ctx)
	waitFor(t, func() bool {
		n, _ := srv.DoInt(ctx, "LLEN", "locksmith_lock_queue:{mw:b}")
		return n == 1
	})
	if f.IsDone() {
		t.Fatal("MultiLock.LockAsync completed while one of its locks was held by another owner")
	}
	if err := c.Lock("mw:b").Unlock(other); err != nil {
		t.Fatal(err)
	}
	held, err := f.Get(ctx)
	if err != nil {
		t.Fatalf("LockAsync after the release: %v", err)
	}
	// Both held by the set's one owner (the lock handed over by the release has the queue's liveness window as
	// its first lease, until the watchdog renews it).
	owner, _ := OwnerOf(held)
	for _, k := range []string{"mw:a", "mw:b"} {
		heldBy(t, srv, k, owner)
	}
	if _, ok := held.Deadline(); ok {
		t.Fatal("a MultiLock taken with the watchdog has a deadline")
	}
	if _, err := m.UnlockAsync(held).Get(ctx); err != nil {
		t.Fatal(err)
	}
	releasedBy(t, "MultiLock.UnlockAsync", held)
}

// redMastersOf starts n independent servers and a Client on each.
func redMastersOf(t *testing.T, n int) ([]*redistest.Server, []*Client) {
	srvs := make([]*redistest.Server, n)
	cs := make([]*Client, n)
	for i := range n {
		srvs[i] = redistest.Start(t)
		cs[i] = relayClient(t, srvs[i], nil)
	}
	return srvs, cs
}

// redLockOf is a RedLock over the lock called name on every Client.
func redLockOf(cs []*Client, name string) *RedLock {
	ls := make([]Locker, len(cs))
	for i, c := range cs {
		ls[i] = c.Lock(name)
	}
	return NewRedLock(ls...)
}

func TestRedLockLockLeaseAndUnlockAsync(t *testing.T) {
	srvs, cs := redMastersOf(t, 3)
	ctx := setCtx(t)
	r := redLockOf(cs, "rf")

	const lease = 5 * time.Second
	held, err := r.LockLease(ctx, lease)
	if err != nil {
		t.Fatalf("LockLease: %v", err)
	}
	owner, ok := OwnerOf(held)
	if !ok {
		t.Fatal("OwnerOf(held) reports no owner")
	}
	// Every master answers within the round; a late one joins the set after it is held.
	for _, s := range srvs {
		waitFor(t, func() bool {
			n, _ := s.DoInt(ctx, "EXISTS", "rf")
			return n == 1
		})
		heldOnServer(t, s, "rf", owner, lease)
	}
	validUntil(t, held, lease)
	if n, err := r.HoldCount(held); err != nil || n != 1 {
		t.Fatalf("HoldCount = %d, %v; want 1", n, err)
	}

	if _, err := r.UnlockAsync(held).Get(ctx); err != nil {
		t.Fatalf("UnlockAsync: %v", err)
	}
	releasedBy(t, "RedLock.UnlockAsync", held)
	for _, s := range srvs {
		freeOnServer(t, s, "rf")
	}
}

// A majority held by another owner: TryLockAsync is refused within its wait (what it took is given back), and
// LockAsync waits until the majority is released.
func TestRedLockTryLockAsyncAndLockAsyncAgainstAMajorityHeldElsewhere(t *testing.T) {
	srvs, cs := redMastersOf(t, 3)
	ctx := setCtx(t)
	r := redLockOf(cs, "rw")

	others := make([]context.Context, 2)
	for i := range others {
		held, err := cs[i].Lock("rw").Lock(ctx) // another owner on two masters of three
		if err != nil {
			t.Fatal(err)
		}
		others[i] = held
	}
	if _, err := r.TryLockAsync(ctx, 300*time.Millisecond, 0).Get(ctx); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("TryLockAsync against a majority held elsewhere = %v, want ErrNotAcquired", err)
	}
	freeOnServer(t, srvs[2], "rw") // the minority it took was given back

	f := r.LockAsync(ctx)
	waitFor(t, func() bool { // its attempt on the free master holds it there while the round waits
		n, _ := srvs[2].DoInt(ctx, "EXISTS", "rw")
		return n == 1
	})
	if f.IsDone() {
		t.Fatal("RedLock.LockAsync completed while a majority was held by another owner")
	}
	for i, held := range others {
		if err := cs[i].Lock("rw").Unlock(held); err != nil {
			t.Fatal(err)
		}
	}
	held, err := f.Get(ctx)
	if err != nil {
		t.Fatalf("LockAsync after the release: %v", err)
	}
	if ok, err := r.IsHeldBy(held); err != nil || !ok {
		t.Fatalf("IsHeldBy = %v, %v; want true", ok, err)
	}
	if _, err := r.UnlockAsync(held).Get(ctx); err != nil {
		t.Fatal(err)
	}
	releasedBy(t, "RedLock.UnlockAsync", held)

	// Free: TryLockAsync takes it at once.
	held, err = r.TryLockAsync(ctx, time.Second, 0).Get(ctx)
	if err != nil {
		t.Fatalf("TryLockAsync on free masters: %v", err)
	}
	if _, err := r.UnlockAsync(held).Get(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range srvs {
		freeOnServer(t, s, "rw")
	}
}

package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/rlock"
)

// Every lock of a MultiLock is held by one owner, which the held context carries: OwnerOf reports it, IsHeldBy and
// HoldCount ask every lock about it, and the server shows that one field in every lock.
func TestMultiLockHoldsEveryLockWithOneOwner(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 20*time.Second)
	// Locks of two Clients in one MultiLock.
	m := rlock.NewMultiLock(a.Lock("mo1"), b.Lock("mo2"), a.Lock("mo3"))
	held, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	owner, ok := rlock.OwnerOf(held)
	if !ok {
		t.Fatal("OwnerOf(MultiLock held context) reports no owner")
	}
	for _, name := range []string{"mo1", "mo2", "mo3"} {
		if got := hgetall(t, srv, name); len(got) != 1 || got[owner] != "1" {
			t.Fatalf("%s on the server: %v, want %s: 1", name, got, owner)
		}
	}
	if ok, err := m.IsHeldBy(held); err != nil || !ok {
		t.Fatalf("IsHeldBy(held) = %v, %v; want true", ok, err)
	}
	if ok, err := m.IsHeldBy(ctx); err != nil || ok {
		t.Fatalf("IsHeldBy(a context without owner) = %v, %v; want false", ok, err)
	}
	if _, err := m.Lock(held); err != nil { // re-entry
		t.Fatal(err)
	}
	if n, err := m.HoldCount(held); err != nil || n != 2 {
		t.Fatalf("HoldCount after a re-entry = %d, %v; want 2", n, err)
	}
	// The owner alone, pinned on another context, is asked the same way (the sets' queries need no held context).
	if n, err := m.HoldCountAsync(rlock.WithOwner(ctx, owner)).Get(ctx); err != nil || n != 2 {
		t.Fatalf("HoldCountAsync(WithOwner(owner)) = %d, %v; want 2", n, err)
	}
	// One lock released behind the MultiLock's back: the MultiLock is no longer held as a whole.
	if _, err := b.Lock("mo2").ForceUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := m.IsHeldByAsync(held).Get(ctx); err != nil || ok {
		t.Fatalf("IsHeldBy after one lock was force-unlocked = %v, %v; want false", ok, err)
	}
	m.Unlock(held)
	m.Unlock(held)
	for _, name := range []string{"mo1", "mo2", "mo3"} {
		if n, _ := srv.DoInt(ctx, "EXISTS", name); n != 0 {
			t.Fatalf("%s held after the final unlock", name)
		}
	}
}

// A MultiLock acquired with a context that carries an owner uses that owner for every lock; a plain lock taken
// with the MultiLock's held context is held by the same owner.
func TestMultiLockUsesTheContextsOwner(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 20*time.Second)
	pinned := rlock.WithOwner(ctx, "4242")
	held, err := rlock.NewMultiLock(c.Lock("mu1"), c.Lock("mu2")).TryLock(pinned, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := rlock.OwnerOf(held); id != "4242" {
		t.Fatalf("OwnerOf(held) = %q, want the pinned 4242", id)
	}
	want := c.ID() + ":4242"
	for _, name := range []string{"mu1", "mu2"} {
		if got := hgetall(t, srv, name); got[want] != "1" {
			t.Fatalf("%s on the server: %v, want %s: 1", name, got, want)
		}
	}
	plain, err := c.Lock("mu3").TryLock(held, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := hgetall(t, srv, "mu3"); got[want] != "1" {
		t.Fatalf("mu3 taken with the MultiLock's held context: %v, want %s: 1", got, want)
	}
	mustUnlock(t, c.Lock("mu3"), plain)
	if err := rlock.NewMultiLock(c.Lock("mu1"), c.Lock("mu2")).Unlock(held); err != nil {
		t.Fatal(err)
	}
}

// A RedLock's locks share one owner too; IsHeldBy and HoldCount count a majority of the masters, so a master that
// is down does not make the RedLock look released.
func TestRedLockOwnerAndQueries(t *testing.T) {
	srvs, cs := redMasters(t, 3, 0)
	ctx := ctxT(t, 20*time.Second)
	r := redLockOn(cs, "ro")
	held, err := r.TryLock(ctx, time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	owner, ok := rlock.OwnerOf(held)
	if !ok {
		t.Fatal("OwnerOf(RedLock held context) reports no owner")
	}
	for _, s := range srvs {
		eventually(t, 5*time.Second, "every master holds the lock", func() bool {
			got, _ := s.DoMap(ctx, "HGETALL", "ro")
			return got[owner] == "1"
		})
	}
	if n, err := r.HoldCount(held); err != nil || n != 1 {
		t.Fatalf("HoldCount = %d, %v; want 1", n, err)
	}
	// One master down: a majority still holds it.
	srvs[2].Close()
	if ok, err := r.IsHeldBy(held); err != nil || !ok {
		t.Fatalf("IsHeldBy with one of three masters down = %v, %v; want true", ok, err)
	}
	// Two down: a majority cannot even be asked.
	srvs[1].Close()
	if _, err := r.IsHeldBy(held); err == nil {
		t.Fatal("IsHeldBy with two of three masters down: no error")
	}
	r.Unlock(held)
}

// The queries of a set refuse a lock of another implementation rather than guess its state.
func TestSetQueriesNeedLocksOfThisPackage(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	m := rlock.NewMultiLock(c.Lock("q1"), foreignLocker{c.Lock("q2")})
	if _, err := m.HoldCount(rlock.WithOwner(context.Background(), "1")); !errors.Is(err, rlock.ErrInvalidArgument) {
		t.Fatalf("HoldCount over a foreign Locker: %v, want an *ArgumentError", err)
	}
}

// foreignLocker is a Locker implemented outside the package (it hides the lock's other methods).
type foreignLocker struct{ l *rlock.Lock }

func (f foreignLocker) Name() string { return f.l.Name() }
func (f foreignLocker) LockAsync(ctx context.Context) *future.Future[context.Context] {
	return f.l.LockAsync(ctx)
}
func (f foreignLocker) LockLeaseAsync(ctx context.Context, lease time.Duration) *future.Future[context.Context] {
	return f.l.LockLeaseAsync(ctx, lease)
}
func (f foreignLocker) TryLockAsync(ctx context.Context, wait, lease time.Duration) *future.Future[context.Context] {
	return f.l.TryLockAsync(ctx, wait, lease)
}
func (f foreignLocker) UnlockAsync(held context.Context) *future.Future[struct{}] {
	return f.l.UnlockAsync(held)
}

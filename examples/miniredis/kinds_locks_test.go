package miniredis_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/rlock"
)

// The lock kinds the README says work on miniredis, each granted, refused while another owner holds it, and
// handed to a waiter that the release wakes. Each call made with testCtx (a context without owner) acts for an
// owner of its own, as another goroutine or process would.

func TestFairLock(t *testing.T) {
	c, srv := newClient(t)
	ctx := testCtx(t)
	l := c.FairLock("fair")

	held, err := l.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if _, err := l.TryLock(ctx, 0, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryLock by another owner while held = %v; want ErrNotAcquired", err)
	}
	waiter := l.LockAsync(ctx)
	queued(t, srv, "redisson_lock_queue:{fair}", 1) // refused, and queued in the fair lock's order
	stillWaiting(t, "the fair lock's waiter", waiter)
	if err := l.Unlock(held); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	next := woken(t, "the fair lock's waiter", waiter)
	if err := l.Unlock(next); err != nil {
		t.Fatalf("the waiter's Unlock: %v", err)
	}
	noKeysLeft(t, srv)
}

func TestFencedLock(t *testing.T) {
	c, srv := newClient(t)
	ctx := testCtx(t)
	l := c.FencedLock("fenced")

	held, first, err := l.Lock(ctx)
	if err != nil || first < 1 {
		t.Fatalf("Lock: token %d, %v; want a positive token", first, err)
	}
	if _, _, err := l.TryLock(ctx, 0, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryLock by another owner while held = %v; want ErrNotAcquired", err)
	}
	waiter := l.LockAsync(ctx)
	queued(t, srv, "locksmith_lock_queue:{fenced}", 1)
	stillWaiting(t, "the fenced lock's waiter", waiter)
	if err := l.Unlock(held); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	next := woken(t, "the fenced lock's waiter", waiter)
	if next.Token <= first {
		t.Fatalf("the waiter's token %d, want above the first holder's %d", next.Token, first)
	}
	if err := l.Unlock(next.Held); err != nil {
		t.Fatalf("the waiter's Unlock: %v", err)
	}
	noKeysLeft(t, srv, "redisson_lock_token:{fenced}") // the token counter outlives the holds: tokens keep growing
}

func TestReadWriteLock(t *testing.T) {
	c, srv := newClient(t)
	ctx := testCtx(t)
	rw := c.ReadWriteLock("rw")

	// Readers share the lock; a writer is refused while they hold it.
	r1, err := rw.ReadLock().Lock(ctx)
	if err != nil {
		t.Fatalf("first ReadLock: %v", err)
	}
	r2, err := rw.ReadLock().TryLock(ctx, 0, 0)
	if err != nil {
		t.Fatalf("second reader: %v", err)
	}
	if _, err := rw.WriteLock().TryLock(ctx, 0, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("WriteLock.TryLock while read-locked = %v; want ErrNotAcquired", err)
	}
	writer := rw.WriteLock().LockAsync(ctx)
	subscribed(t, srv, "redisson_rwlock:{rw}")
	if err := rw.ReadLock().Unlock(r1); err != nil {
		t.Fatalf("first reader's Unlock: %v", err)
	}
	stillWaiting(t, "the writer", writer) // one reader still holds it
	if err := rw.ReadLock().Unlock(r2); err != nil {
		t.Fatalf("second reader's Unlock: %v", err)
	}
	w := woken(t, "the writer", writer)
	if mode, err := rw.Mode(ctx); err != nil || mode != "write" {
		t.Fatalf("Mode while the writer holds it = %q, %v", mode, err)
	}
	// And a reader waits for the writer.
	if _, err := rw.ReadLock().TryLock(ctx, 0, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("ReadLock.TryLock while write-locked = %v; want ErrNotAcquired", err)
	}
	reader := rw.ReadLock().LockAsync(ctx)
	subscribed(t, srv, "redisson_rwlock:{rw}")
	stillWaiting(t, "the reader", reader)
	if err := rw.WriteLock().Unlock(w); err != nil {
		t.Fatalf("the writer's Unlock: %v", err)
	}
	r := woken(t, "the reader", reader)
	if err := rw.ReadLock().Unlock(r); err != nil {
		t.Fatalf("the reader's Unlock: %v", err)
	}
	noKeysLeft(t, srv)
}

func TestMultiLock(t *testing.T) {
	c, srv := newClient(t)
	ctx := testCtx(t)
	m := rlock.NewMultiLock(c.Lock("multi:a"), c.Lock("multi:b"))

	held, err := m.Lock(ctx)
	if err != nil {
		t.Fatalf("MultiLock.Lock: %v", err)
	}
	// Both locks are held by one owner, the one the held context carries.
	owner, _ := rlock.OwnerOf(held)
	a, _ := srv.HKeys("multi:a")
	b, _ := srv.HKeys("multi:b")
	if len(a) != 1 || !slices.Equal(a, b) || srv.HGet("multi:a", a[0]) != "1" || !strings.HasSuffix(a[0], owner) {
		t.Fatalf("owners of multi:a %v and multi:b %v; want one, the held context's %q", a, b, owner)
	}
	if err := m.Unlock(held); err != nil {
		t.Fatalf("MultiLock.Unlock: %v", err)
	}

	// One of its locks held by another owner: refused, and the lock it took meanwhile is given back.
	other, err := c.Lock("multi:b").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryLock(ctx, 0, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("MultiLock.TryLock with multi:b held elsewhere = %v; want ErrNotAcquired", err)
	}
	if srv.Exists("multi:a") {
		t.Fatal("multi:a still held after the MultiLock was refused")
	}
	waiter := m.LockAsync(ctx)
	queued(t, srv, "locksmith_lock_queue:{multi:b}", 1)
	stillWaiting(t, "the MultiLock's waiter", waiter)
	if err := c.Lock("multi:b").Unlock(other); err != nil {
		t.Fatal(err)
	}
	next := woken(t, "the MultiLock's waiter", waiter)
	if err := m.Unlock(next); err != nil {
		t.Fatalf("the waiter's Unlock: %v", err)
	}
	noKeysLeft(t, srv)
}

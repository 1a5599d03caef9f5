package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// rwKeys returns the read-hold keys of the read-write lock name on the server.
func rwKeys(t *testing.T, srv server, name string) []string {
	t.Helper()
	keys, err := srv.DoStrings(context.Background(), "KEYS", "{"+name+"}:*")
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// Redisson's read-write force-unlock test (RedissonReadWriteLockTest.testForceUnlock): forcing one half leaves a
// lock held in the other mode alone — in particular the write lock's ForceUnlock does not end other owners' read
// holds — and forcing the half the lock is in ends every hold of it.
func TestReadWriteLockForceUnlockOfEachHalf(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 20*time.Second)
	r, w := a.ReadWriteLock("rwf").ReadLock(), a.ReadWriteLock("rwf").WriteLock()

	heldA, err := r.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	heldB, err := b.ReadWriteLock("rwf").ReadLock().Lock(ctx) // another owner's read hold, another Client
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := r.IsLocked(ctx); err != nil || !ok {
		t.Fatalf("ReadLock.IsLocked with two readers = %v, %v", ok, err)
	}
	if ok, err := w.IsLocked(ctx); err != nil || ok {
		t.Fatalf("WriteLock.IsLocked with two readers = %v, %v", ok, err)
	}
	if done, err := w.ForceUnlock(ctx); err != nil || done {
		t.Fatalf("WriteLock.ForceUnlock in read mode = %v, %v; want false (nothing done)", done, err)
	}
	if ok, _ := r.IsLocked(ctx); !ok {
		t.Fatal("the write lock's ForceUnlock ended the read holds")
	}
	if heldA.Err() != nil || heldB.Err() != nil {
		t.Fatalf("readers' held contexts ended: %v, %v", context.Cause(heldA), context.Cause(heldB))
	}
	if n := len(rwKeys(t, srv, "rwf")); n != 2 {
		t.Fatalf("%d read-hold keys after the write lock's ForceUnlock, want 2", n)
	}

	if done, err := r.ForceUnlockAsync(ctx).Get(ctx); err != nil || !done {
		t.Fatalf("ReadLock.ForceUnlock in read mode = %v, %v; want true", done, err)
	}
	if ok, _ := r.IsLockedAsync(ctx).Get(ctx); ok {
		t.Fatal("read-locked after the read lock's ForceUnlock")
	}
	if keys := rwKeys(t, srv, "rwf"); len(keys) != 0 {
		t.Fatalf("read-hold keys left after the read lock's ForceUnlock: %v", keys)
	}
	if cause := context.Cause(heldA); !errors.Is(cause, rlock.ErrLockLost) {
		t.Fatalf("this Client's reader: cause %v, want ErrLockLost at once", cause)
	}
	// The other Client learns it at its next renewal, as for any force unlock; its Unlock finds nothing.
	if err := b.ReadWriteLock("rwf").ReadLock().Unlock(heldB); !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("B's Unlock after the force unlock: %v, want ErrNotHeld", err)
	}

	// Write mode, with a downgrade: the writer also holds a read hold.
	heldW, err := w.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Lock(heldW); err != nil {
		t.Fatal(err)
	}
	if done, err := r.ForceUnlock(ctx); err != nil || done {
		t.Fatalf("ReadLock.ForceUnlock in write mode = %v, %v; want false", done, err)
	}
	if ok, _ := w.IsLocked(ctx); !ok || heldW.Err() != nil {
		t.Fatal("the read lock's ForceUnlock ended the write lock")
	}
	if done, err := w.ForceUnlock(ctx); err != nil || !done {
		t.Fatalf("WriteLock.ForceUnlock in write mode = %v, %v; want true", done, err)
	}
	if ok, _ := w.IsLocked(ctx); ok {
		t.Fatal("write-locked after the write lock's ForceUnlock")
	}
	if keys := rwKeys(t, srv, "rwf"); len(keys) != 0 {
		t.Fatalf("the writer's read-hold keys are left: %v", keys)
	}
	if cause := context.Cause(heldW); !errors.Is(cause, rlock.ErrLockLost) {
		t.Fatalf("the writer's held context: cause %v, want ErrLockLost", cause)
	}
	if s := a.Stats(); s.Held != 0 {
		t.Fatalf("Stats().Held = %d after both force unlocks, want 0", s.Held)
	}
}

// ReadLock.RemainTimeToLive is the lock's: the longest of its holds, whichever half holds it.
func TestReadLockRemainTimeToLive(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 20*time.Second)
	r := c.ReadWriteLock("rwt").ReadLock()
	if d, err := r.RemainTimeToLive(ctx); err != nil || d != rlock.TTLNoKey {
		t.Fatalf("RemainTimeToLive of a free lock = %v, %v; want TTLNoKey", d, err)
	}
	held, err := r.LockLease(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.RemainTimeToLiveAsync(ctx).Get(ctx)
	if err != nil || d <= 4*time.Second || d > 5*time.Second {
		t.Fatalf("RemainTimeToLive with a 5 s read hold = %v, %v", d, err)
	}
	if err := r.Unlock(held); err != nil {
		t.Fatal(err)
	}
}

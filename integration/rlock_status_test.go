package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// Status reads a lock's owners, hold counts, mode and TTL in one step, and tells a key that is not a lock apart
// from a free lock.
func TestLockStatus(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	l := c.Lock("status")

	st, err := l.Status(ctx)
	if err != nil || st.Locked || st.TTL != rlock.TTLNoKey || len(st.Owners) != 0 || st.Name != "status" {
		t.Fatalf("free lock: %+v, %v", st, err)
	}

	held := mustLock(t, l, ctx)
	if _, err := l.Lock(held); err != nil { // re-entry: 2 holds
		t.Fatal(err)
	}
	other, err := l.TryLock(rlock.WithOwner(ctx, "7"), 0, 0) // refused: still one owner
	if !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryLock by another owner = %v, %v", other, err)
	}
	st, err = l.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	owner := mustOwner(t, held)
	if !st.Locked || st.Mode != "" || len(st.Owners) != 1 || st.Owners[0] != (rlock.LockOwner{ID: owner, Holds: 2}) {
		t.Fatalf("held lock: %+v", st)
	}
	if st.TTL <= 25*time.Second || st.TTL > rlock.DefaultWatchdogTimeout {
		t.Fatalf("TTL %v, want about the watchdog timeout", st.TTL)
	}
	mustUnlock(t, l, held)
	mustUnlock(t, l, held)

	// A read-write lock: its mode, its readers.
	rw := c.ReadWriteLock("status:rw")
	r1, err := rw.ReadLock().LockLease(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := rw.ReadLock().LockLease(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	st, err = c.Lock("status:rw").Status(ctx)
	if err != nil || st.Mode != "read" || len(st.Owners) != 2 || st.Owners[0].Holds != 1 || st.Owners[1].Holds != 1 {
		t.Fatalf("read-write lock held by two readers: %+v, %v", st, err)
	}
	if rst, err := rw.Status(ctx); err != nil || rst.Mode != st.Mode || len(rst.Owners) != 2 {
		t.Fatalf("ReadWriteLock.Status = %+v, %v", rst, err)
	}
	for _, h := range []context.Context{r1, r2} {
		if err := rw.ReadLock().Unlock(h); err != nil {
			t.Fatal(err)
		}
	}

	// Keys that are not locks: another type, a hash of something else.
	if _, err := srv.Do(ctx, "SET", "status:string", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "HSET", "status:hash", "field", "not a count"); err != nil {
		t.Fatal(err)
	}
	for key, detail := range map[string]string{"status:string": "it holds a string", "status:hash": `field "field" holds`} {
		st, err := c.Lock(key).Status(ctx)
		var nl *rlock.NotLockError
		if !errors.Is(err, rlock.ErrNotLock) || !errors.As(err, &nl) || nl.Name != key || !strings.Contains(nl.Detail, detail) {
			t.Fatalf("%s: %+v, %v; want a NotLockError saying %q", key, st, err, detail)
		}
	}

	// Async form, and bad input before any I/O.
	if st, err := l.StatusAsync(ctx).Get(ctx); err != nil || st.Locked {
		t.Fatalf("StatusAsync after unlock: %+v, %v", st, err)
	}
	if _, err := c.Lock("").Status(ctx); !errors.Is(err, rlock.ErrInvalidArgument) {
		t.Fatalf("empty name: %v", err)
	}
}

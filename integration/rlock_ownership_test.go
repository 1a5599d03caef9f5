package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// A held context acts only through the Client that made it. Through another Client's handles every call that takes
// it is refused with ErrOtherClient and sends nothing: that Client does not hold the lock, so it could neither
// renew nor count the hold, and the holder's view (its Stats, its held context, its later Unlock) would disagree
// with the server.
func TestHeldContextOfAnotherClientIsRefused(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 20*time.Second)
	held := mustLock(t, a.Lock("own"), ctx)
	owner := mustOwner(t, held)

	before := commandCounts(t, srv)
	lb := b.Lock("own")
	rw := b.ReadWriteLock("own-rw")
	calls := map[string]error{}
	_, calls["Lock"] = lb.Lock(held)
	_, calls["TryLock"] = lb.TryLock(held, 0, 0)
	_, calls["LockLease"] = lb.LockLease(held, time.Second)
	_, calls["LockAsync"] = lb.LockAsync(held).Get(ctx)
	calls["Unlock"] = lb.Unlock(held)
	_, calls["UnlockAsync"] = lb.UnlockAsync(held).Get(ctx)
	_, calls["IsHeldBy"] = lb.IsHeldBy(held)
	_, calls["HoldCount"] = lb.HoldCount(held)
	calls["Run"] = lb.Run(held, func(context.Context) error {
		t.Error("Run ran its function with another Client's held context")
		return nil
	})
	_, calls["FairLock.TryLock"] = b.FairLock("own-fair").TryLock(held, 0, 0)
	_, _, calls["FencedLock.TryLock"] = b.FencedLock("own-fenced").TryLock(held, 0, 0)
	_, calls["ReadLock.Lock"] = rw.ReadLock().Lock(held)
	_, calls["WriteLock.HoldCount"] = rw.WriteLock().HoldCount(held)
	// Another lock of the same Client B: the held context is still A's.
	_, calls["other lock"] = b.Lock("own-other").TryLock(held, 0, 0)
	for name, err := range calls {
		if !errors.Is(err, rlock.ErrOtherClient) {
			t.Errorf("%s through another Client: %v, want ErrOtherClient", name, err)
		}
	}
	if sent := commandsSince(before, commandCounts(t, srv)); sent != "" {
		t.Errorf("the refused calls sent commands, want none: %s", sent)
	}

	// A's hold is untouched, on the server and in A.
	if got := hgetall(t, srv, "own"); got[owner] != "1" || len(got) != 1 {
		t.Fatalf("server hash after the refused calls: %v, want %s: 1", got, owner)
	}
	if held.Err() != nil {
		t.Fatalf("A's held context ended: %v", context.Cause(held))
	}
	if s := a.Stats(); s.Held != 1 {
		t.Fatalf("A's Stats().Held = %d, want 1", s.Held)
	}
	if s := b.Stats(); s.Held != 0 {
		t.Fatalf("B's Stats().Held = %d, want 0", s.Held)
	}
	mustUnlock(t, a.Lock("own"), held)
	if n, _ := srv.DoInt(context.Background(), "EXISTS", "own"); n != 0 {
		t.Fatal("the lock is still on the server after A's Unlock")
	}
}

// An owner pinned with WithOwner is not tied to a Client: as documented, another Client acquires and releases as
// it (this is how a lock is passed between processes, or shared with a Java service).
func TestPinnedOwnerWorksThroughAnyClient(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 20*time.Second)
	pinned := rlock.WithOwner(ctx, a.ID()+":77")

	heldA, err := a.Lock("pin").Lock(pinned)
	if err != nil {
		t.Fatal(err)
	}
	heldB, err := b.Lock("pin").TryLock(pinned, 0, 0) // re-enters: the same owner on the server
	if err != nil {
		t.Fatalf("re-entry through another Client with a pinned owner: %v", err)
	}
	if got := hgetall(t, srv, "pin"); got[a.ID()+":77"] != "2" {
		t.Fatalf("server hash: %v, want count 2 for the pinned owner", got)
	}
	if n, err := b.Lock("pin").HoldCount(pinned); err != nil || n != 2 {
		t.Fatalf("HoldCount through B = %d, %v; want 2", n, err)
	}
	mustUnlock(t, b.Lock("pin"), heldB)
	mustUnlock(t, a.Lock("pin"), heldA)
	if n, _ := srv.DoInt(context.Background(), "EXISTS", "pin"); n != 0 {
		t.Fatal("the lock is still on the server after both releases")
	}
}

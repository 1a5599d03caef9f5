package integration

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

func TestFencedLockTokensIncreaseAcrossEveryAcquireKind(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	l := c.FencedLock("fenced")
	ctx := ctxT(t, 10*time.Second)

	held, first, err := l.Lock(ctx)
	if err != nil || first < 1 {
		t.Fatalf("Lock: token %d, err %v; want a positive token", first, err)
	}
	// Re-entry with the held context counts as an acquire too.
	held2, tok, err := l.TryLock(held, 0, 0)
	if err != nil || tok != first+1 || held2 != held {
		t.Fatalf("re-entry: token %d, err %v, same context %v; want %d", tok, err, held2 == held, first+1)
	}
	if n, _ := l.HoldCount(held); n != 2 {
		t.Fatalf("hold count %d, want 2", n)
	}
	if ok, _ := l.IsHeldBy(held); !ok {
		t.Fatal("IsHeldBy(holder) false")
	}
	for range 2 {
		if err := l.Unlock(held); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	}
	if cause := doneCause(t, held, time.Second); !errors.Is(cause, rlock.ErrReleased) {
		t.Fatalf("held cause %v, want ErrReleased", cause)
	}
	held, tok, err = l.LockLease(ctx, 5*time.Second)
	if err != nil || tok != first+2 {
		t.Fatalf("LockLease: token %d, err %v; want %d", tok, err, first+2)
	}
	if ttl, _ := srv.DoInt(ctx, "PTTL", "fenced"); ttl < 4000 || ttl > 5000 {
		t.Fatalf("lease not applied: PTTL %d", ttl)
	}
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	held, tok, err = l.TryLock(ctx, time.Second, 2*time.Second)
	if err != nil || tok != first+3 {
		t.Fatalf("TryLock: token %d, err %v; want %d", tok, err, first+3)
	}
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	f, err := l.LockAsync(ctx).Get(ctx)
	if err != nil || f.Token != first+4 {
		t.Fatalf("LockAsync: token %d, err %v; want %d", f.Token, err, first+4)
	}
	if cur, _ := l.Token(ctx); cur != first+4 {
		t.Fatalf("Token %d, want %d", cur, first+4)
	}
	if _, err := l.UnlockAsync(f.Held).Get(ctx); err != nil {
		t.Fatal(err)
	}
}

// fencedStore is a resource guarded by a fenced lock: it refuses a write whose token is lower than the highest it
// accepted.
type fencedStore struct {
	mu      sync.Mutex
	highest int64
	value   string
}

var errStaleToken = errors.New("stale fencing token")

func (s *fencedStore) write(token int64, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return errStaleToken
	}
	s.highest, s.value = token, v
	return nil
}

func TestFencedLockTokenLetsTheResourceRefuseAPausedFormerHolder(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	store := &fencedStore{}

	heldA, tokA, err := a.FencedLock("res").LockLease(ctx, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.write(tokA, "A1"); err != nil {
		t.Fatal(err)
	}
	// A pauses (here: simply does nothing) past its lease; its held context tells it so, but a paused process
	// would not look. B takes the lock meanwhile and writes.
	heldB, tokB, err := b.FencedLock("res").TryLock(ctx, 2*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tokB <= tokA {
		t.Fatalf("B's token %d not above A's %d", tokB, tokA)
	}
	if err := store.write(tokB, "B1"); err != nil {
		t.Fatal(err)
	}
	if cause := doneCause(t, heldA, time.Second); !errors.Is(cause, rlock.ErrLeaseExpired) {
		t.Fatalf("A's held cause %v, want ErrLeaseExpired", cause)
	}
	// A wakes up and writes with its old token: refused.
	if err := store.write(tokA, "A2"); !errors.Is(err, errStaleToken) {
		t.Fatalf("paused holder's write: %v, want refused", err)
	}
	if store.value != "B1" {
		t.Fatalf("store holds %q", store.value)
	}
	if err := a.FencedLock("res").Unlock(heldA); !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("A's unlock after its lease: %v, want ErrNotHeld", err)
	}
	if err := b.FencedLock("res").Unlock(heldB); err != nil {
		t.Fatal(err)
	}
}

func TestFencedLockWaiterIsWokenByTheRelease(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	heldA, _, err := a.FencedLock("w").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fut := b.FencedLock("w").TryLockAsync(ctx, 5*time.Second, 0)
	subscribed(t, srv, "redisson_lock__channel:{w}") // B is waiting
	start := time.Now()
	if err := a.FencedLock("w").Unlock(heldA); err != nil {
		t.Fatal(err)
	}
	f, err := fut.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("B acquired %v after the release: not woken by the message", d)
	}
	if err := b.FencedLock("w").Unlock(f.Held); err != nil {
		t.Fatal(err)
	}
	// The client keeps a lock's subscriptions a moment after its last waiter left (a waiter often comes back).
	eventually(t, 5*time.Second, "no channel left subscribed", func() bool {
		ch, _ := srv.DoStrings(ctx, "PUBSUB", "CHANNELS")
		return len(ch) == 0
	})
}

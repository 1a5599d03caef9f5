package rlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// An acquire, a release or a query on a name whose key holds another type reports a *NotLockError naming the lock
// (not the server's raw WRONGTYPE line), which still unwraps to the server's reply.
func TestWrongTypeKeyIsNotALock(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	ctx := context.Background()
	if _, err := srv.Do(ctx, "SET", "str", "x"); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		var nl *NotLockError
		var se *resp.ServerError
		if !errors.Is(err, ErrNotLock) || !errors.As(err, &nl) || nl.Name != "str" || !errors.As(err, &se) {
			t.Errorf("%s on a string key: %T %v; want a *NotLockError for %q", what, err, err, "str")
			return
		}
		msg := nl.Error()
		if !strings.Contains(msg, `the key "str" is not a lock`) || !strings.Contains(msg, "another lock name") {
			t.Errorf("%s on a string key says %q; want it to name the key and the remedy", what, msg)
		}
	}
	_, err := c.Lock("str").Lock(ctx)
	check("Lock", err)
	_, err = c.Lock("str").TryLock(ctx, 0, 0)
	check("TryLock", err)
	_, err = c.FairLock("str").TryLock(ctx, 0, 0)
	check("FairLock.TryLock", err)
	_, _, err = c.FencedLock("str").TryLock(ctx, 0, 0)
	check("FencedLock.TryLock", err)
	_, err = c.ReadWriteLock("str").WriteLock().TryLock(ctx, 0, 0)
	check("WriteLock.TryLock", err)
	_, err = c.ReadWriteLock("str").ReadLock().TryLock(ctx, 0, 0)
	check("ReadLock.TryLock", err)
	_, err = c.Lock("str").HoldCount(WithOwner(ctx, "1"))
	check("HoldCount", err)
	check("Unlock", c.Lock("str").Unlock(WithOwner(ctx, "1")))
	if s := c.Stats(); s.Held != 0 || s.Waiters != 0 {
		t.Errorf("Stats after the refusals = %+v, want nothing held or waiting", s)
	}
}

// An Unlock of a lock that was lost before it reports the loss (ErrLockLost, or ErrLeaseExpired when the lease
// ran out locally), still matching ErrNotHeld; an Unlock through a context that never held it is ErrNotHeld alone.
func TestUnlockOfALostLockReportsTheLoss(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	ctx := context.Background()

	// Deleted behind the holder's back, and not yet noticed by a renewal: the Unlock finds out.
	held, err := c.Lock("deleted").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "DEL", "deleted"); err != nil {
		t.Fatal(err)
	}
	err = c.Lock("deleted").Unlock(held)
	if !errors.Is(err, ErrLockLost) || !errors.Is(err, ErrNotHeld) || errors.Is(err, ErrLeaseExpired) {
		t.Errorf("Unlock of a deleted lock = %v; want ErrLockLost (and ErrNotHeld)", err)
	}
	if cause := context.Cause(held); !errors.Is(cause, ErrLockLost) {
		t.Errorf("held context's cause = %v, want ErrLockLost", cause)
	}
	// Asked again: the held context ended as lost, so the answer stays the same.
	if err := c.Lock("deleted").Unlock(held); !errors.Is(err, ErrLockLost) {
		t.Errorf("a second Unlock = %v, want ErrLockLost", err)
	}

	// A lease lock whose lease ran out before the Unlock.
	held, err = c.Lock("leased").LockLease(ctx, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	<-held.Done()
	// The server's own expiry comes a little later; deleting the key stands for it.
	if _, err := srv.Do(ctx, "DEL", "leased"); err != nil {
		t.Fatal(err)
	}
	err = c.Lock("leased").Unlock(held)
	if !errors.Is(err, ErrLeaseExpired) || !errors.Is(err, ErrNotHeld) {
		t.Errorf("Unlock after the lease ran out = %v; want ErrLeaseExpired (and ErrNotHeld)", err)
	}
	if _, err = c.Lock("leased").UnlockAsync(held).Get(ctx); !errors.Is(err, ErrLeaseExpired) {
		t.Errorf("UnlockAsync after the lease ran out = %v; want ErrLeaseExpired", err)
	}

	// An owner that never held it.
	err = c.Lock("never").Unlock(WithOwner(ctx, "7"))
	if err != ErrNotHeld {
		t.Errorf("Unlock by an owner that never held the lock = %v, want ErrNotHeld itself", err)
	}
}

// A Release of several ids that were not held says how many, and still matches ErrPermitNotFound; the held ones
// are released all the same.
func TestReleaseOfSeveralUnknownPermitsSaysHowMany(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	ctx := context.Background()
	s := c.PermitExpirableSemaphore("pes")
	if ok, err := s.TrySetPermits(ctx, 1); !ok || err != nil {
		t.Fatalf("TrySetPermits: %v, %v", ok, err)
	}
	id, err := s.Acquire(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	const unknown1, unknown2 = "00000000000000000000000000000001", "00000000000000000000000000000002"
	err = s.Release(ctx, id, unknown1, unknown2)
	if !errors.Is(err, ErrPermitNotFound) || !strings.HasSuffix(err.Error(), "(2 ids)") {
		t.Fatalf("Release of one held and two unknown ids = %v; want ErrPermitNotFound for 2 ids", err)
	}
	if avail, held, err := s.Permits(ctx); err != nil || avail != 1 || held != 0 {
		t.Fatalf("Permits after the Release = %d available, %d held, %v; want the held one back", avail, held, err)
	}
	if err := s.Release(ctx, unknown1); err != ErrPermitNotFound {
		t.Fatalf("Release of one unknown id = %v; want ErrPermitNotFound itself", err)
	}
}

package rlock

import (
	"context"
	"errors"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// A release the client thought partial (it counted two holds of the owner) that deleted the lock, because the
// server had one hold fewer, ends the owner's local hold: the held context is cancelled with ErrLockLost and
// nothing is renewed or reported as held any more.
func TestPartialReleaseThatDeletedTheLockEndsTheHold(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	ctx := WithOwner(context.Background(), "9")
	l := c.Lock("phantom")
	first, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Lock(first); err != nil { // re-entry: two holds
		t.Fatal(err)
	}
	// Another party of the same owner took one hold away on the server.
	if _, err := srv.Do(context.Background(), "HINCRBY", "phantom", c.ID()+":9", "-1"); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(first); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if locked, err := l.IsLocked(context.Background()); err != nil || locked {
		t.Fatalf("IsLocked = %v, %v after the last hold on the server was released", locked, err)
	}
	if cause := context.Cause(first); !errors.Is(cause, ErrLockLost) {
		t.Errorf("held context's cause = %v, want ErrLockLost", cause)
	}
	if s := c.Stats(); s.Held != 0 {
		t.Errorf("the client still records %d held locks", s.Held)
	}
	if err := l.Unlock(first); !errors.Is(err, ErrNotHeld) {
		t.Errorf("a further Unlock = %v, want ErrNotHeld", err)
	}
}

package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/faultproxy"
	"github.com/locksmith-go/locksmith/rlock"
)

// A re-entry with a lease shorter than the hold's sets that lease on the server (Redisson's PEXPIRE), also when
// its reply is lost. The held context must not outlive what the server may hold: while it is live, the server
// holds the lock.
func TestAmbiguousReentryWithAShorterLeaseEndsTheHeldContextInTime(t *testing.T) {
	r := newReentryRig(t, false, rlock.Config{})
	owner := mustOwner(t, r.held)
	r.px.Withhold(faultproxy.Downstream) // every reply from now on: the re-entry runs, its reply never comes
	_, err := r.l.TryLock(r.held, 0, 100*time.Millisecond)
	r.px.Restore()
	// At the response timeout, 1 s (ten times the re-entry's lease), the outcome is unknown; or the call ended
	// with its context, the held context itself, when that ended first.
	var ou *rlock.OutcomeUnknownError
	if !errors.As(err, &ou) && !errors.Is(err, context.Canceled) {
		t.Fatalf("re-entry = %v, want an *OutcomeUnknownError or the held context's end", err)
	}
	server := hgetall(t, r.srv, "re")
	if r.held.Err() == nil && server[owner] == "" {
		t.Fatalf("the held context is live, and the server holds nothing (%v)", server)
	}
	if server[owner] == "" {
		if cause := context.Cause(r.held); !errors.Is(cause, rlock.ErrLeaseExpired) {
			t.Fatalf("held context: cause %v, want ErrLeaseExpired", cause)
		}
	}
}

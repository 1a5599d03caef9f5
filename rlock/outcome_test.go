package rlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/resp"
)

// An unknown outcome is its own error: it matches ErrOutcomeUnknown and its cause, never ErrNotAcquired, and its
// message says what became of a grant.
func TestOutcomeUnknownErrorMatchesItsSentinelAndCause(t *testing.T) {
	lost := fmt.Errorf("reset: %w", conn.ErrConnLost)
	err := error(&OutcomeUnknownError{Name: "orders", Owner: "u:1", Releasing: true, Err: lost})
	var ou *OutcomeUnknownError
	if !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, conn.ErrConnLost) || !errors.As(err, &ou) {
		t.Fatalf("%v: does not match ErrOutcomeUnknown, its cause, or the type", err)
	}
	if errors.Is(err, ErrNotAcquired) {
		t.Fatalf("%v matches ErrNotAcquired", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `"orders"`) || !strings.Contains(msg, "releasing the grant") {
		t.Fatalf("message %q does not name the lock or say that the grant is released", msg)
	}
	pinned := &OutcomeUnknownError{Name: "orders", Owner: "u:7", Err: lost}
	if msg := pinned.Error(); !strings.Contains(msg, "u:7") || !strings.Contains(msg, "ends with its lease") {
		t.Fatalf("message %q does not say that a pinned owner's grant ends with its lease", msg)
	}
	if waited := (&OutcomeUnknownError{Name: "orders", Releasing: true, Err: errWaitInFlight}); errors.Is(waited,
		conn.ErrConnLost) || !errors.Is(waited, ErrOutcomeUnknown) {
		t.Fatalf("%v: a wait that ran out in flight is an unknown outcome without a transport cause", waited)
	}
	// A response timeout's cause also matches context.DeadlineExceeded: the Observer still calls it an error.
	timedOut := &OutcomeUnknownError{Name: "orders", Err: fmt.Errorf("%w (%w)", conn.ErrConnLost, context.DeadlineExceeded)}
	if got := acquireOutcome(timedOut); got != AcquireError {
		t.Fatalf("acquireOutcome(%v) = %v, want error", timedOut, got)
	}
}

func TestStillHeldErrorSaysHowManyHoldsAreLeft(t *testing.T) {
	err := error(&StillHeldError{Name: "orders", Owner: "u:7", Holds: 2})
	if !errors.Is(err, ErrStillHeld) || errors.Is(err, ErrNotHeld) {
		t.Fatalf("%v: errors.Is ErrStillHeld %v, ErrNotHeld %v", err, errors.Is(err, ErrStillHeld),
			errors.Is(err, ErrNotHeld))
	}
	if msg := err.Error(); !strings.Contains(msg, "2 time(s)") || !strings.Contains(msg, "u:7") {
		t.Fatalf("message %q does not say how many holds of which owner are left", msg)
	}
}

// releaseFound reads every release script's reply: what released a hold, and what did not.
func TestReleaseFoundReadsEveryReleaseReply(t *testing.T) {
	num := func(n int64) resp.Value { return resp.Value{Type: resp.Integer, Int: n} }
	for _, tc := range []struct {
		name string
		v    resp.Value
		want bool
	}{
		{"nil: not held", resp.Value{Type: resp.BulkString, Null: true}, false},
		{"0: one of several", num(0), true},
		{"1: the last", num(1), true},
		{"2: handed to another client's waiter", num(2), true},
		{"nonce: handed to a waiter of this client", resp.Value{Type: resp.BulkString, Str: "10000000001"}, true},
		{"-n: another count, nothing changed", num(-2), false},
		{"read [0, left]", resp.Value{Type: resp.Array, Elems: []resp.Value{num(0), num(1500)}}, true},
	} {
		if got := releaseFound(tc.v); got != tc.want {
			t.Errorf("%s: releaseFound = %v, want %v", tc.name, got, tc.want)
		}
	}
}

package rlock

import (
	"errors"
	"strconv"
	"strings"
)

// What a caller is told when the outcome of an acquire, or what is left of a release, is not what it asked: the
// errors of an unknown outcome and of holds left on the server, and the Observer's event for orphaned grants
// (orphan.go has the mechanics).

// ErrOutcomeUnknown is matched (errors.Is) by the *OutcomeUnknownError of an acquire whose attempt was sent but not
// answered: the caller holds nothing, and the lock the server may have granted is being released.
var ErrOutcomeUnknown = errors.New("rlock: the acquire's outcome is unknown: its attempt was sent and no answer came")

// ErrStillHeld is matched (errors.Is) by the *StillHeldError an Unlock returns when it ended the owner's holds
// through this Client but the server still holds the lock for that owner.
var ErrStillHeld = errors.New("rlock: the server still holds the lock for this owner")

// errWaitInFlight is the cause of an acquire whose wait ran out while one of its attempts was in flight, and the
// attempt was not answered within inFlightGrace.
var errWaitInFlight = errors.New("rlock: the wait ran out and the attempt in flight was not answered")

// OutcomeUnknownError reports an acquire whose outcome is unknown: an attempt was written but its answer never
// came (the connection dropped or was reset after its response timeout), or the call's wait ran out while the
// attempt was in flight. The caller holds nothing. It matches ErrOutcomeUnknown, and Err through Unwrap (for a
// transport failure, conn.ErrConnLost and, after a response timeout, conn.ErrTimeout).
type OutcomeUnknownError struct {
	Name  string // the lock
	Owner string // the owner the attempt acquired as (<clientUUID>:<ownerID>)
	// Releasing is true when the client releases whatever the attempt may have been granted: it sends the release,
	// which is safe to repeat, until the server answers it or the grant's lease has passed (Stats.OrphansReleased
	// and Stats.OrphansExpired count the outcomes). It is false for an owner pinned with WithOwner, whose holds may
	// be another Client's: a grant, if any, ends with its lease (see Unlock's *StillHeldError for a re-entry).
	Releasing bool
	// Err is the cause: the transport's error, or the end of the wait while the attempt was in flight.
	Err error
}

// Error names the lock, says that the outcome is unknown and why, and what becomes of a grant.
func (e *OutcomeUnknownError) Error() string {
	var sb strings.Builder
	sb.WriteString("rlock: lock ")
	sb.WriteString(strconv.Quote(e.Name))
	sb.WriteString(": the acquire's outcome is unknown (")
	if e.Err != nil {
		sb.WriteString(e.Err.Error())
	} else {
		sb.WriteString("no answer")
	}
	if e.Releasing {
		sb.WriteString("); the caller holds nothing and the client is releasing the grant, if any")
	} else {
		sb.WriteString("); the caller holds nothing; a grant, if any, cannot be told from other holds of the pinned " +
			"owner " + e.Owner + " and ends with its lease")
	}
	return sb.String()
}

// Unwrap returns ErrOutcomeUnknown and the cause.
func (e *OutcomeUnknownError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrOutcomeUnknown}
	}
	return []error{ErrOutcomeUnknown, e.Err}
}

// StillHeldError reports an Unlock that ended the owner's holds of a lock through this Client while the server
// still holds the lock for that owner Holds times: holds this Client did not count — an acquire of the owner whose
// outcome was unknown and whose grant could not be taken back, or another Client sharing the owner (WithOwner).
// The held context has ended (cause ErrReleased) and this Client no longer renews the lock: those holds end with
// their lease unless they are released as that owner. It matches ErrStillHeld.
type StillHeldError struct {
	Name  string
	Owner string
	Holds int64
}

// Error names the lock, the owner and the holds left, and what to do.
func (e *StillHeldError) Error() string {
	return "rlock: lock " + strconv.Quote(e.Name) + ": released through this client, but the server still holds it " +
		strconv.FormatInt(e.Holds, 10) + " time(s) for owner " + e.Owner + " (an acquire whose outcome was unknown, " +
		"or another client sharing the owner); they end with their lease, or unlock them with WithOwner(ctx, " +
		strconv.Quote(e.Owner) + ") or ForceUnlock"
}

// Is reports whether target is ErrStillHeld.
func (e *StillHeldError) Is(target error) bool { return target == ErrStillHeld }

// OrphanEvent describes a grant that no caller holds — an acquire whose outcome was unknown, or a grant that
// arrived after its call was abandoned — once the client has released it or given up on it.
type OrphanEvent struct {
	Name  string
	Owner string
	// Released is true when the client released the grant; false when it was left to its lease (the server did not
	// answer before the lease passed, the Client closed, or the owner is pinned and shared).
	Released bool
	// Err is the last error when the grant was left to its lease, if any.
	Err error
}

// Orphan does nothing.
func (NopObserver) Orphan(OrphanEvent) {}

func (c callbackObserver) Orphan(e OrphanEvent) { c.run("Orphan", func() { c.o.Orphan(e) }) }

// orphanCounts are the Client's counts of orphaned grants (Stats).

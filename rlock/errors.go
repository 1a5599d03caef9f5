package rlock

import (
	"errors"
	"strings"
)

var (
	// ErrNotHeld is returned by Unlock when the owner in the context does not hold the lock (Redisson's
	// IllegalMonitorStateException): another owner holds it, it was never taken, it expired, or it was force-unlocked.
	// Unlock with the context the acquire returned, or pin the same owner with WithOwner.
	ErrNotHeld = errors.New("rlock: the lock is not held by this owner; unlock with the context the acquire returned")

	// ErrNotAcquired is returned by TryLock (and TryRun) when the lock could not be taken within the wait time.
	// It is never returned because a context ended: that returns the context's error.
	ErrNotAcquired = errors.New("rlock: lock not acquired within the wait time")

	// ErrLockLost is the cause (context.Cause) of a held context when a renewal found that the server no longer
	// holds the lock for this owner (it expired while the client could not renew it, or was force-unlocked):
	// another owner may hold it now. Stop working under the lock.
	ErrLockLost = errors.New("rlock: lock lost: the server no longer holds it for this owner")

	// ErrLeaseExpired is the cause of a held context when the lease ran out locally: no renewal was confirmed
	// within the lease (the server was unreachable or slow), or a lease lock reached the end of its lease. The
	// server may already have let another owner in. Stop working under the lock.
	ErrLeaseExpired = errors.New("rlock: lease expired: no confirmed renewal within the lease")

	// ErrReleased is the cause of a held context once the lock was released by Unlock (its last hold) or Run.
	ErrReleased = errors.New("rlock: lock released")

	// ErrClosed is returned by every call on a closed Client, fails every waiter pending at Close, and is the
	// cause of held contexts that were still held at Close. Create a new Client to go on.
	ErrClosed = errors.New("rlock: client closed")

	// ErrInvalidArgument is matched (errors.Is) by the *ArgumentError returned for bad input: an empty lock name,
	// a negative or sub-millisecond lease, a negative wait, a malformed owner id. Nothing was sent to the server.
	ErrInvalidArgument = errors.New("rlock: invalid argument")
)

// ArgumentError reports bad input to an rlock call; nothing was sent to the server. It matches ErrInvalidArgument
// with errors.Is.
type ArgumentError struct {
	Op     string // the call, such as "TryLock"
	Arg    string // the argument at fault, such as "lease"
	Value  string // its value, printed
	Reason string // what it must be
}

// Error says which argument of which call is wrong and what it must be.
func (e *ArgumentError) Error() string {
	var sb strings.Builder
	sb.WriteString("rlock: ")
	sb.WriteString(e.Op)
	sb.WriteString(": invalid ")
	sb.WriteString(e.Arg)
	if e.Value != "" {
		sb.WriteString(" ")
		sb.WriteString(e.Value)
	}
	sb.WriteString(": ")
	sb.WriteString(e.Reason)
	return sb.String()
}

// Is reports whether target is ErrInvalidArgument.
func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArgument }

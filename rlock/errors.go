package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/future"
)

// The package's errors. Callers branch with errors.Is on the sentinels and errors.As on the typed errors below
// them; transport failures come from package conn (conn.ErrUnavailable, conn.ErrConnLost, *conn.ConnError) and
// error replies as *resp.ServerError.
var (
	// ErrNotHeld is returned by Unlock when the owner in the context does not hold the lock (Redisson's
	// IllegalMonitorStateException): the context carries no owner or another one, or the lock was never taken by
	// it. Unlock with the context the acquire returned, or pin the same owner with WithOwner. When the held context
	// did hold the lock and lost it before the Unlock (it expired, or was force-unlocked), the error also matches
	// ErrLockLost (or ErrLeaseExpired): there is nothing to release, but the work done under the lock may have
	// overlapped another owner's.
	ErrNotHeld = errors.New("rlock: the lock is not held by this owner; unlock with the context the acquire returned")

	// ErrNotAcquired is returned by TryLock (and TryRun, and every Try call of the family) when the lock or the
	// permits could not be taken within the wait time. It is never returned because a context ended: that returns
	// the context's error. The caller holds nothing: try again later, or wait longer.
	ErrNotAcquired = errors.New("rlock: lock not acquired within the wait time")

	// ErrLockLost is the cause (context.Cause) of a held context when a renewal found that the server no longer
	// holds the lock for this owner (it expired while the client could not renew it, or was force-unlocked):
	// another owner may hold it now. Stop working under the lock. Unlock of such a lock returns an error matching
	// ErrLockLost (and ErrNotHeld): nothing was released, there was nothing left to release.
	ErrLockLost = errors.New("rlock: lock lost: the server no longer holds it for this owner")

	// ErrLeaseExpired is the cause of a held context when the lease ran out locally: no renewal was confirmed
	// within the lease (the server was unreachable or slow), or a lease lock reached the end of its lease. The
	// server may already have let another owner in. Stop working under the lock. Unlock of such a lock returns an
	// error matching ErrLeaseExpired (and ErrNotHeld) when the server no longer held it, and nil when it still did
	// (the release then freed it).
	ErrLeaseExpired = errors.New("rlock: lease expired: no confirmed renewal within the lease")

	// ErrReleased is the cause of a held context once the lock was released by Unlock (its last hold) or Run. It
	// is not a failure: the lock went as asked, and work under it should have finished.
	ErrReleased = errors.New("rlock: lock released")

	// ErrClosed is returned by every call on a closed Client, fails every waiter pending at Close, and is the
	// cause of held contexts that were still held at Close. Create a new Client to go on.
	ErrClosed = errors.New("rlock: client closed")

	// ErrInvalidArgument is matched (errors.Is) by the *ArgumentError returned for bad input: an empty lock name,
	// a negative or sub-millisecond lease, a negative wait, a malformed owner id, permits that are not positive.
	// Nothing was sent to the server. Fix the argument the error names; retrying cannot help.
	ErrInvalidArgument = errors.New("rlock: invalid argument")

	// ErrOtherClient is returned by every call of a Client's handles given a held context that another Client
	// made: a held context acts only through the Client that acquired it (that Client renews the hold, counts it
	// in Stats and cancels the context when it ends). Nothing was sent to the server. Use a handle of the Client
	// that acquired the lock; to share an owner between Clients, pin it with WithOwner.
	ErrOtherClient = errors.New("rlock: the held context belongs to another Client; use that Client's handles, or pin a shared owner with WithOwner")

	// ErrInCallback is returned at once by the package's blocking calls (and by future.Get on a pending future)
	// when they are called inside a future callback (OnComplete, Then, Compose) or an Observer method: those run
	// on the goroutine that delivers replies, messages and timers, so blocking there would stall it, and wait
	// forever for a reply it would have to read itself. Nothing was sent. Use the Async form and OnComplete, or
	// make the blocking call from another goroutine. It is future.ErrInCallback (errors.Is matches either).
	ErrInCallback = future.ErrInCallback

	// ErrLockUpgrade is returned by WriteLock's acquire calls when the owner holds a read hold of the same lock
	// and no write hold: the write lock waits for every reader to leave, the owner included, so it would wait for
	// itself forever (Redisson lets it hang until its own read lease runs out). Release the read holds first, or
	// take the write lock first and the read lock under it (a downgrade, which is allowed).
	ErrLockUpgrade = errors.New("rlock: the owner holds the read lock; release it before taking the write lock")

	// ErrPermitNotFound is returned by PermitExpirableSemaphore.Release and UpdateLease when a permit id is not
	// held: it was released already, its lease ended (the permit went back to the pool), or it was never issued by
	// this semaphore. Nothing changed for that id.
	ErrPermitNotFound = errors.New("rlock: permit not held: released already, lease ended, or never issued")

	// ErrRateNotSet is returned by a RateLimiter's acquire and query calls when no rate was set on the server:
	// call TrySetRate (or SetRate) first.
	ErrRateNotSet = errors.New("rlock: the rate limiter has no rate; call TrySetRate or SetRate first")

	// ErrRateExceeded is returned when more permits are asked for at once than the rate (or the fixed window's
	// limit) allows per interval: such a request could never be granted. Ask for fewer permits.
	ErrRateExceeded = errors.New("rlock: more permits requested than the rate allows per interval")

	// ErrNoQuorum is matched (errors.Is) by the *QuorumError a RedLock returns when so many of its locks failed
	// with errors (servers down or unreachable, not merely held by someone else) that a majority cannot be
	// reached. Bring masters back, or retry later.
	ErrNoQuorum = errors.New("rlock: RedLock: a majority of the masters cannot be reached")

	// ErrNotLock is matched (errors.Is) by the *NotLockError a lock's calls return when the key under the lock's
	// name exists but is not a lock (another type, or, for Status, a hash whose fields are not hold counts):
	// another program uses the name. Nothing was changed. Choose another lock name.
	ErrNotLock = errors.New("rlock: the key exists and is not a lock")

	// ErrNotReplicated is matched (errors.Is) by the *ReplicationError an acquire returns when Config.SyncReplicas
	// is set and no grant of the call was acknowledged by that many replicas within Config.SyncTimeout, on every
	// attempt the call could make: each such grant was released again, so the caller holds nothing. A failover
	// could have lost those grants. Check the replicas (INFO replication on the master), or lower SyncReplicas or
	// raise SyncTimeout.
	ErrNotReplicated = errors.New("rlock: the grant was not acknowledged by enough replicas")
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

// QuorumError reports a RedLock acquisition that failed fast because errors on too many masters made a majority
// impossible. It matches ErrNoQuorum and, through Unwrap, each master's error.
type QuorumError struct {
	Quorum   int              // locks needed
	Total    int              // locks in the RedLock
	Acquired int              // locks that were taken (and have been released)
	Errors   map[string]error // the failed locks' errors, keyed "#<index> <lock name>" (RedLock names repeat)
}

// Error says how many masters failed and why.
func (e *QuorumError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "rlock: RedLock: %d of %d masters failed, a majority of %d is out of reach:", len(e.Errors), e.Total, e.Quorum)
	for name, err := range e.Errors {
		fmt.Fprintf(&sb, " %s: %v;", name, err)
	}
	return strings.TrimSuffix(sb.String(), ";")
}

// Unwrap returns ErrNoQuorum and the masters' errors.
func (e *QuorumError) Unwrap() []error {
	errs := []error{ErrNoQuorum}
	for _, err := range e.Errors {
		errs = append(errs, err)
	}
	return errs
}

// NotLockError reports that the key under a lock's name is not a lock: Status found another type or a hash whose
// fields are not hold counts, or an acquire, release or query was refused by the server with WRONGTYPE because the
// key (or one of the lock's auxiliary keys, which share its name) holds another type. It matches ErrNotLock, and
// through Unwrap the server's error reply when there was one. Nothing was changed on the server. Choose another
// lock name, or delete the key if nothing else uses it.
type NotLockError struct {
	Name   string // the lock name (the key)
	Detail string // what the key holds instead, such as "it holds a string"
	Err    error  // the server's WRONGTYPE reply (a *resp.ServerError), or nil when Status read the key itself
}

// Error names the key and what it holds.
func (e *NotLockError) Error() string {
	return "rlock: the key " + strconv.Quote(e.Name) + " is not a lock (" + e.Detail + "); choose another lock name"
}

// Is reports whether target is ErrNotLock.
func (e *NotLockError) Is(target error) bool { return target == ErrNotLock }

// Unwrap returns Err.
func (e *NotLockError) Unwrap() error { return e.Err }

// notLockError turns the server's WRONGTYPE reply to a command on the lock name's keys into a *NotLockError;
// other errors are returned as they are.
func notLockError(name string, err error) error {
	if err == nil || !isServerError(err, "WRONGTYPE") {
		return err
	}
	return &NotLockError{Name: name, Detail: "it or one of the lock's keys holds another type of value", Err: err}
}

// unlockLostError is what Unlock returns for a lock that was lost before it: the server no longer held it for
// the owner. It matches the cause (ErrLockLost, or ErrLeaseExpired when the lease had run out locally first) and
// ErrNotHeld, which Unlock returned for it before.
type unlockLostError struct{ cause error }

// Error says that the lock was lost before the Unlock, and why.
func (e *unlockLostError) Error() string {
	if e.cause == ErrLeaseExpired {
		return "rlock: unlock of a lock whose lease had expired: the server no longer held it for this owner, " +
			"another owner may have held it meanwhile (renewals could not get through, or a lease lock outlived its lease)"
	}
	return "rlock: unlock of a lost lock: the server no longer held it for this owner (it expired while renewals " +
		"could not get through, or it was force-unlocked); another owner may have held it meanwhile"
}

// Is reports whether target is ErrNotHeld.
func (e *unlockLostError) Is(target error) bool { return target == ErrNotHeld }

// Unwrap returns the cause: ErrLockLost or ErrLeaseExpired.
func (e *unlockLostError) Unwrap() error { return e.cause }

// ReplicationError reports an acquire that was granted but whose grant too few replicas acknowledged (Config
// SyncReplicas and SyncTimeout), on its last attempt. It matches ErrNotReplicated, and Err through Unwrap.
type ReplicationError struct {
	Name     string        // the lock
	Wanted   int           // Config.SyncReplicas
	Acked    int           // replicas that acknowledged the last grant within Timeout (0 when Err says why none is known)
	Timeout  time.Duration // Config.SyncTimeout
	Attempts int           // grants made by the call, each released again
	// Released is false when the release of the last grant failed: the lock then stays held on the server under
	// the call's owner until its lease ends (the watchdog timeout for Lock and TryLock without a lease).
	Released bool
	// Err says why the count is unknown (WAIT's error reply, or the connection dropped between the acquire's
	// reply and WAIT's), or why the release failed; nil when the replicas simply did not answer in time.
	Err error
}

// Error says how many replicas acknowledged, how many were wanted, and what to do.
func (e *ReplicationError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "rlock: lock %q: %d of %d replicas acknowledged the grant within %v (%d attempts)",
		e.Name, e.Acked, e.Wanted, e.Timeout, e.Attempts)
	if e.Err != nil {
		fmt.Fprintf(&sb, ": %v", e.Err)
	}
	if e.Released {
		sb.WriteString("; the grant was released")
	} else {
		sb.WriteString("; releasing the grant failed, it ends with its lease")
	}
	sb.WriteString("; check the replicas, or lower Config.SyncReplicas or raise Config.SyncTimeout")
	return sb.String()
}

// Is reports whether target is ErrNotReplicated.
func (e *ReplicationError) Is(target error) bool { return target == ErrNotReplicated }

// Unwrap returns Err.
func (e *ReplicationError) Unwrap() error { return e.Err }

// errPermitsNotFound reports n permit ids of one Release that were not held.
func errPermitsNotFound(n int) error {
	if n == 1 {
		return ErrPermitNotFound
	}
	return &permitsNotFoundError{n: n}
}

// permitsNotFoundError is ErrPermitNotFound for several ids, with their number.
type permitsNotFoundError struct{ n int }

// Error says how many ids were not held.
func (e *permitsNotFoundError) Error() string {
	return ErrPermitNotFound.Error() + " (" + strconv.Itoa(e.n) + " ids)"
}

// Unwrap returns ErrPermitNotFound.
func (e *permitsNotFoundError) Unwrap() error { return ErrPermitNotFound }

// The constructors of the package's *ArgumentErrors, so that every call words the same mistake the same way.

func nameError(op string) error {
	return &ArgumentError{Op: op, Arg: "name", Value: `""`, Reason: "must not be empty"}
}

func leaseError(op string, lease time.Duration, reason string) error {
	return &ArgumentError{Op: op, Arg: "lease", Value: lease.String(), Reason: reason}
}

func waitError(op string, wait time.Duration) error {
	return &ArgumentError{Op: op, Arg: "wait", Value: wait.String(), Reason: "must not be negative (0 makes one attempt)"}
}

func permitsError(op string, n int64) error {
	return &ArgumentError{Op: op, Arg: "permits", Value: strconv.FormatInt(n, 10), Reason: "must be positive"}
}

func nilContextError(op string) error {
	return &ArgumentError{Op: op, Arg: "ctx", Value: "nil", Reason: "must not be nil; pass context.Background() for a call without a bound"}
}

// lostBy says how a hold was lost before an Unlock of it: the cause its held context ended with.
type lostBy uint8

const (
	notLost   lostBy = iota
	lostLock         // ErrLockLost
	lostLease        // ErrLeaseExpired
)

// lostBy reports whether h ended because it was lost, and how.
func (h *hold) lostBy() lostBy {
	if p := h.gone.Load(); p != nil {
		switch *p {
		case ErrLockLost:
			return lostLock
		case ErrLeaseExpired:
			return lostLease
		}
	}
	return notLost
}

// lostUnlockError is the error of an Unlock through held that the server answered with err: when err is
// ErrNotHeld and held is a hold of this very lock that this client saw lost before the Unlock, an error matching
// the loss as well (the op cannot tell: it found no hold to release). It does not block.
func lostUnlockError(held context.Context, kind holdKind, name string, err error) error {
	if err != ErrNotHeld || held == nil {
		return err
	}
	if h, ok := held.Value(ownerKey{}).(*hold); ok && h.kind == kind && h.name == name {
		switch h.lostBy() {
		case lostLock:
			return &unlockLostError{cause: ErrLockLost}
		case lostLease:
			return &unlockLostError{cause: ErrLeaseExpired}
		}
	}
	return err
}

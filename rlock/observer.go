package rlock

import (
	"time"

	"github.com/locksmith-go/locksmith/future"
)

// Observer receives lock events, for metrics. Its methods are called on the goroutine that observed the event —
// the caller's, the transport's event loop, or the timer's worker — so they must return quickly and never block
// (count, record a histogram, or hand off). They run as callbacks (future.RunAsCallback): a blocking call of this
// package made inside one returns ErrInCallback at once, without sending anything, as does future.Get on a pending
// future; the Async forms work there. Embed NopObserver in an implementation so that it keeps compiling when
// methods are added.
type Observer interface {
	// Acquired is called when a lock was taken (also by re-entry), before the acquire call returns.
	Acquired(AcquiredEvent)
	// Released is called when an Unlock (or Run) finished releasing a lock's last hold, successfully or not.
	Released(ReleasedEvent)
	// RenewalBatch is called when a renewal EVALSHA completed, successfully or not.
	RenewalBatch(RenewalEvent)
	// Lost is called when a held lock was lost (a renewal found it gone) or its lease expired locally.
	Lost(LostEvent)
}

// AcquiredEvent describes one successful acquisition.
type AcquiredEvent struct {
	Name  string        // lock name
	Owner string        // <clientUUID>:<ownerID>
	Wait  time.Duration // from the acquire call to the grant
	// Reentrant is true when the owner already held the lock (hold count > 1).
	Reentrant bool
	// HandOff is true when the lock was passed from a releasing holder of this client in the same round trip.
	HandOff bool
}

// ReleasedEvent describes the release of a lock's last hold.
type ReleasedEvent struct {
	Name  string
	Owner string
	Held  time.Duration // from the first acquisition to the release
	// HandOff is true when the lock went straight to a waiter of this client.
	HandOff bool
	// Err is nil on success, ErrNotHeld when the server no longer held it for the owner, or the transport error.
	Err error
}

// RenewalEvent describes one renewal EVALSHA.
type RenewalEvent struct {
	Locks   int           // locks in the batch
	Renewed int           // locks the server renewed
	Gone    int           // locks the server no longer held for their owner (reported lost)
	Took    time.Duration // round trip
	Err     error         // transport or server error; the batch's locks are retried until their lease expires
}

// LostEvent describes a lock that stopped being held without an Unlock.
type LostEvent struct {
	Name  string
	Owner string
	Cause error // ErrLockLost or ErrLeaseExpired
}

// NopObserver is an Observer that does nothing. Embed it to implement only some methods.
type NopObserver struct{}

// Acquired does nothing.
func (NopObserver) Acquired(AcquiredEvent) {}

// Released does nothing.
func (NopObserver) Released(ReleasedEvent) {}

// RenewalBatch does nothing.
func (NopObserver) RenewalBatch(RenewalEvent) {}

// Lost does nothing.
func (NopObserver) Lost(LostEvent) {}

var _ Observer = NopObserver{}

// callbackObserver calls an Observer's methods as callbacks (future.RunAsCallback), so that a blocking call inside
// one fails at once with ErrInCallback instead of stalling the goroutine that reported the event (an event loop,
// the timer's worker), which may be the one its reply or wake-up depends on.
type callbackObserver struct{ o Observer }

func (c callbackObserver) Acquired(e AcquiredEvent) { future.RunAsCallback(func() { c.o.Acquired(e) }) }

func (c callbackObserver) Released(e ReleasedEvent) { future.RunAsCallback(func() { c.o.Released(e) }) }

func (c callbackObserver) RenewalBatch(e RenewalEvent) {
	future.RunAsCallback(func() { c.o.RenewalBatch(e) })
}

func (c callbackObserver) Lost(e LostEvent) { future.RunAsCallback(func() { c.o.Lost(e) }) }

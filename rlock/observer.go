package rlock

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
)

// Observer receives lock events, for metrics. Its methods are called on the goroutine that observed the event —
// the caller's, the transport's event loop, or the timer's worker — so they must return quickly and never block
// (count, record a histogram, or hand off). They run as callbacks (future.RunAsCallback): a blocking call of this
// package made inside one returns ErrInCallback at once, without sending anything, as does future.Get on a pending
// future; the Async forms work there. Embed NopObserver in an implementation so that it keeps compiling when
// methods are added.
//
// Ready-made adapters live in modules of their own, so that this one needs neither dependency: a Prometheus
// collector (github.com/locksmith-go/locksmith/adapters/rlockprom) and OpenTelemetry metrics and spans
// (github.com/locksmith-go/locksmith/adapters/rlockotel).
type Observer interface {
	// Acquired is called when a lock was taken (also by re-entry), before the acquire call returns.
	Acquired(AcquiredEvent)
	// AcquireFailed is called when an acquire of a lock ended without the lock: its wait ran out, its context
	// ended, or it failed. It is called once per call, when the call's future completes.
	AcquireFailed(AcquireFailedEvent)
	// Released is called when an Unlock (or Run) finished releasing a lock's last hold, successfully or not.
	Released(ReleasedEvent)
	// RenewalBatch is called when a renewal EVALSHA completed, successfully or not.
	RenewalBatch(RenewalEvent)
	// Lost is called when a held lock was lost (a renewal found it gone) or its lease expired locally.
	Lost(LostEvent)
	// Connection is called for every change in the transport's connections (connected, lost, reconnected,
	// failover, resubscribed): the events conn.Config.OnEvent receives, which is still called first when set.
	Connection(conn.Event)
	// PubSubDenied is called the first time the server refuses this Client a pub/sub permission: once for a
	// message a script of this package published (the Redis user lacks the channel, or +publish/+spublish: the
	// script did all it does and the call reports its own outcome, only the wake-up was lost), and once for a
	// subscription (the user lacks the channel or +subscribe/+ssubscribe: waiters then rely on their bounds). See
	// the package documentation, "Redis permissions (ACL)".
	PubSubDenied(PubSubDeniedEvent)
	// Orphan is called when a grant no caller holds (an acquire whose outcome was unknown, or one abandoned while
	// it was granted) was released, or left to its lease.
	Orphan(OrphanEvent)
}

// AcquireOutcome says how an acquire that did not get the lock ended. Its String is a short lower-case label,
// made for metrics.
type AcquireOutcome uint8

const (
	// AcquireTimeout: the call's wait ran out (ErrNotAcquired), including a TryLock with wait 0 that was refused.
	AcquireTimeout AcquireOutcome = iota + 1
	// AcquireCanceled: the call's context ended (context.Canceled or context.DeadlineExceeded).
	AcquireCanceled
	// AcquireError: any other error (transport, server, an unknown outcome, a closed Client, bad input).
	AcquireError
)

// String returns "timeout", "canceled" or "error".
func (o AcquireOutcome) String() string {
	switch o {
	case AcquireTimeout:
		return "timeout"
	case AcquireCanceled:
		return "canceled"
	case AcquireError:
		return "error"
	}
	return "AcquireOutcome(" + strconv.Itoa(int(o)) + ")"
}

// acquireOutcome classifies an acquire's error.
func acquireOutcome(err error) AcquireOutcome {
	switch {
	case errors.Is(err, ErrOutcomeUnknown):
		return AcquireError // (its transport cause may match context.DeadlineExceeded)
	case errors.Is(err, ErrNotAcquired):
		return AcquireTimeout
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return AcquireCanceled
	}
	return AcquireError
}

// AcquireFailedEvent describes one acquire call that ended without the lock.
type AcquireFailedEvent struct {
	Name    string
	Owner   string         // <clientUUID>:<ownerID>; "" when the call failed before an owner was resolved
	Wait    time.Duration  // from the acquire call to its end
	Outcome AcquireOutcome // timeout, canceled or error
	Err     error          // what the call returned
	// Ctx is the acquire call's context, for its values (a trace span, request ids); it has ended when Outcome is
	// AcquireCanceled. Do not keep it.
	Ctx context.Context
}

// PubSubDeniedEvent describes the server's first refusal of a pub/sub permission.
type PubSubDeniedEvent struct {
	Command string // "publish" (a script's message) or "subscribe" (a waiter's subscription)
	Name    string // the object (lock, semaphore, latch) whose script published; "" for a subscription
	Channel string // the channel refused
	Err     error  // the server's error reply (a *resp.ServerError)
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
	// Ctx is the acquire call's context, for its values (a trace span, request ids). Do not keep it.
	Ctx context.Context
}

// ReleasedEvent describes the release of a lock's last hold.
type ReleasedEvent struct {
	Name  string
	Owner string
	Held  time.Duration // from the first acquisition to the release
	// HandOff is true when the lock went straight to a waiter of this client.
	HandOff bool
	// Err is nil on success, ErrNotHeld when the server no longer held it for the owner (matching ErrLockLost when
	// it was lost), or the transport error.
	Err error
	// Took is how long the release took: from the Unlock call (or the client's own release of a grant nobody
	// received) to the server's answer; from its last attempt when it handed the lock to a waiter of this client.
	Took time.Duration
	// Ctx is the held context that was released (its values are the acquiring context's). Do not keep it.
	Ctx context.Context
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
	// Ctx is the held context that was lost (its values are the acquiring context's). Do not keep it.
	Ctx context.Context
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

// AcquireFailed does nothing.
func (NopObserver) AcquireFailed(AcquireFailedEvent) {}

// Connection does nothing.
func (NopObserver) Connection(conn.Event) {}

// PubSubDenied does nothing.
func (NopObserver) PubSubDenied(PubSubDeniedEvent) {}

var _ Observer = NopObserver{}

// callbackObserver calls an Observer's methods as callbacks (future.RunAsCallback), so that a blocking call inside
// one fails at once with ErrInCallback instead of stalling the goroutine that reported the event (an event loop,
// the timer's worker), which may be the one its reply or wake-up depends on. A panic in one is logged, not raised
// (callbackpanic.go).
type callbackObserver struct {
	o   Observer
	log *slog.Logger
}

// run runs the Observer's method event as fn.
func (c callbackObserver) run(event string, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			logCallbackPanic(c.log, "the Observer's "+event, r)
		}
	}()
	future.RunAsCallback(fn)
}

func (c callbackObserver) Acquired(e AcquiredEvent) { c.run("Acquired", func() { c.o.Acquired(e) }) }

func (c callbackObserver) Released(e ReleasedEvent) { c.run("Released", func() { c.o.Released(e) }) }

func (c callbackObserver) RenewalBatch(e RenewalEvent) {
	c.run("RenewalBatch", func() { c.o.RenewalBatch(e) })
}

func (c callbackObserver) Lost(e LostEvent) { c.run("Lost", func() { c.o.Lost(e) }) }

func (c callbackObserver) AcquireFailed(e AcquireFailedEvent) {
	c.run("AcquireFailed", func() { c.o.AcquireFailed(e) })
}

func (c callbackObserver) Connection(e conn.Event) { c.run("Connection", func() { c.o.Connection(e) }) }

func (c callbackObserver) PubSubDenied(e PubSubDeniedEvent) {
	c.run("PubSubDenied", func() { c.o.PubSubDenied(e) })
}

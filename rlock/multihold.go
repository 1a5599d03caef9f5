package rlock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// A MultiLock or RedLock held: the held context the caller gets, over the held contexts of its locks (the
// components). It is cancelled when fewer than the set's quorum of components remain held, when the validity
// ends, or at the final Unlock.

// multiKey finds the multiHold of a held context.
type multiKey struct{}

// multiHoldState is the life cycle of a multiHold: held, then released (by the final Unlock).
type multiHoldState uint8

const (
	multiHeld multiHoldState = iota
	multiReleased
)

// multiHold is a MultiLock or RedLock held: the held component contexts and the combined held context, which is
// cancelled when fewer than quorum components remain held, when the validity ends, or at the final Unlock.
type multiHold struct {
	set    *multiSet
	parent context.Context
	held   context.Context
	cancel context.CancelCauseFunc
	stopDL context.CancelFunc // releases the validity deadline's timer; nil without lease

	mu    sync.Mutex // guards the fields below
	state multiHoldState
	comps []context.Context // held component contexts, by index; nil = not held
	alive int
	holds int // acquisitions not yet released (re-entries count)
	stops []func() bool
	// stopPending abandons the attempts of the winning RedLock round still in flight (a grant among them is
	// released); called by the final Unlock. Nil for a MultiLock.
	stopPending context.CancelFunc
}

// newMultiHold builds the held context over comps and watches the components (a registration each, no goroutine
// until one ends).
func (s *multiSet) newMultiHold(parent context.Context, comps []context.Context, validUntil time.Time) *multiHold {
	h := &multiHold{set: s, parent: parent, comps: comps, holds: 1}
	base, cancel := context.WithCancelCause(h)
	h.cancel = cancel
	h.held = base
	if !validUntil.IsZero() {
		h.held, h.stopDL = context.WithDeadlineCause(base, validUntil, ErrLeaseExpired)
	}
	h.mu.Lock()
	for i, c := range comps {
		if c == nil {
			continue
		}
		h.alive++
		h.stops = append(h.stops, context.AfterFunc(c, func() { h.componentEnded(i, c) }))
	}
	h.mu.Unlock()
	return h
}

// join adds a component granted after the set was already held (a RedLock master that answered late). It reports
// false when the set was released meanwhile: the caller releases the grant.
func (h *multiHold) join(i int, c context.Context) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != multiHeld || h.comps[i] != nil {
		return false
	}
	h.comps[i] = c
	h.alive++
	h.stops = append(h.stops, context.AfterFunc(c, func() { h.componentEnded(i, c) }))
	return true
}

// componentEnded reacts to a component's held context ending (lost, expired, force-unlocked): below quorum, the
// combined held context is cancelled with the component's cause.
func (h *multiHold) componentEnded(i int, c context.Context) {
	h.mu.Lock()
	if h.state != multiHeld || h.comps[i] != c {
		h.mu.Unlock()
		return
	}
	h.alive--
	below := h.alive < h.set.quorum
	h.mu.Unlock()
	if below {
		cause := context.Cause(c)
		if cause == nil || errors.Is(cause, ErrReleased) {
			cause = ErrLockLost
		}
		h.cancel(cause)
	}
}

// Deadline reports no deadline: the validity, when there is one, is the held context's.
func (h *multiHold) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns nil: the held context above the hold is the one cancelled.
func (h *multiHold) Done() <-chan struct{} { return nil }

// Err returns nil.
func (h *multiHold) Err() error { return nil }

// Value returns the hold for multiKey and otherwise what the acquiring context holds.
func (h *multiHold) Value(key any) any {
	if _, ok := key.(multiKey); ok {
		return h
	}
	return h.parent.Value(key)
}

// String names the held set, for context printing.
func (h *multiHold) String() string { return "rlock.Held(" + h.set.kind + ")" }

package rlock

import (
	"context"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/timer"
)

// A held family lock (fair, fenced, read or write hold) is a famHold: the same life cycle as the plain lock's hold
// (a held context that is the lease, one timeout on the client's timer, renewal by a batching watchdog, loss
// reported through the context's cause), with the release and renewal the lock's layout needs. It is named after
// the fenced lock, the simplest lock that uses it.

// famHoldKind says which layout a held lock has on the server.
type famHoldKind uint8

const (
	famKindLock  famHoldKind = iota // the plain lock's HASH: fair and fenced locks
	famKindRead                     // read holds of a read-write lock: field <owner>, one key per hold
	famKindWrite                    // the write hold of a read-write lock: field <owner>:write
)

// famHoldKey identifies a held family lock locally: one name, one owner, one kind.
type famHoldKey struct {
	name  string
	owner string
	kind  famHoldKind
}

// famHoldState is the life cycle of a famHold. Legal transitions, under the family mutex:
//
//	famHoldHeld      -> famHoldReleasing  the last hold's unlock started (its renewal cancelled at that moment)
//	famHoldReleasing -> famHoldGone       the release completed (or failed)
//	famHoldHeld      -> famHoldGone       lost, expired locally, force-unlocked, or the client closed
type famHoldState uint8

const (
	famHoldHeld famHoldState = iota
	famHoldReleasing
	famHoldGone
)

// famReleaseFunc builds the command that releases one hold of owner, expecting the owner to hold expect (0 =
// whatever it holds), re-arming lease (milliseconds) while holds remain. The reply follows the family's release
// convention: nil = not held, 0 = one released and others remain, 1 = the last released, -n = the owner holds n.
type famReleaseFunc func(owner string, expect int64, lease string) conn.Cmd

// famHold is one family lock held by one owner through this client.
type famHold struct {
	f       *family
	key     famHoldKey
	field   string // the hash field renewals check: the owner, or <owner>:write
	prefix  string // read holds: the owner's hold-key prefix (renewed with the lock); "" otherwise
	release famReleaseFunc
	parent  context.Context // the acquiring context: its values are visible through held
	held    context.Context // context.WithCancelCause(h)
	cancel  context.CancelCauseFunc

	// Guarded by the family mutex.
	state    famHoldState
	watchdog bool // renewed by the watchdog (some acquire took no lease)
	renewing bool // a renewal is batched or in flight
	count    int64
	lease    time.Duration // the lease a partial release re-arms
	deadline time.Duration // on c.now(): the lease surely ends on the server no earlier than this
	acquired time.Duration
	token    int64 // fenced locks: the token of the last grant
	tm       *timer.Timeout
}

// famGrant describes a grant for grantLocked.
type famGrant struct {
	key      famHoldKey
	field    string
	prefix   string
	release  famReleaseFunc
	parent   context.Context
	count    int64
	lease    time.Duration
	watchdog bool
	sentAt   time.Duration // when the granting command was sent
	token    int64
}

// grantLocked records a grant: a new hold, or a re-entry of the owner's hold. The renewal (or the lease's local
// end) is scheduled before the caller completes its future, so no grant is ever without one (Redisson #6483).
// Called with the family mutex held.
func (f *family) grantLocked(g famGrant) (*famHold, error) {
	if f.closed || f.isClosed() {
		return nil, ErrClosed
	}
	end := g.sentAt + g.lease
	if h := f.holds[g.key]; h != nil && h.state == famHoldHeld {
		h.count = g.count
		h.lease = g.lease
		if g.key.kind == famKindLock || end > h.deadline {
			// The plain layout's PEXPIRE sets the lease; a read-write lock keeps the longer one.
			h.deadline = end
		}
		h.watchdog = h.watchdog || g.watchdog
		h.token = g.token
		if h.renewing {
			return h, nil // the renewal in flight re-arms the timer when it completes
		}
		h.stopTimerLocked()
		return h, h.armLocked()
	}
	h := &famHold{f: f, key: g.key, field: g.field, prefix: g.prefix, release: g.release, parent: g.parent,
		count: g.count, lease: g.lease, watchdog: g.watchdog, deadline: end, acquired: g.sentAt, token: g.token}
	h.held, h.cancel = context.WithCancelCause(h)
	if err := h.armLocked(); err != nil {
		return nil, err
	}
	f.holds[g.key] = h
	return h, nil
}

// armLocked schedules the hold's next timer event: the next renewal (watchdog holds) or the local end of the lease.
func (h *famHold) armLocked() error {
	c := h.f.c
	d := h.expireAt() - c.now()
	if h.watchdog {
		d = min(d, c.cfg.WatchdogTimeout/3)
	}
	tm, err := c.timer.NewTimeout(h, d)
	if err != nil {
		return err
	}
	h.tm = tm
	return nil
}

// expireAt is when the held context is cancelled with ErrLeaseExpired unless a renewal was confirmed: slightly
// before the lease can end on the server (two timer ticks plus 1% of the lease, at most a tenth of it), as for the
// plain lock.
func (h *famHold) expireAt() time.Duration {
	return h.deadline - min(2*timer.DefaultTick+h.lease/100, h.lease/10)
}

func (h *famHold) stopTimerLocked() {
	if h.tm != nil {
		h.tm.Cancel()
		h.tm = nil
	}
}

// Run is the hold's timer task: a renewal fell due, or the lease reached its local end. It runs on the timer's
// worker and hands renewals to the family's watchdog.
func (h *famHold) Run(t *timer.Timeout) {
	f := h.f
	f.mu.Lock()
	if h.tm != t || h.state != famHoldHeld {
		f.mu.Unlock()
		return
	}
	h.tm = nil
	now := f.c.now()
	if now >= h.expireAt() {
		f.dropLocked(h)
		f.mu.Unlock()
		f.lost(h, ErrLeaseExpired)
		return
	}
	if !h.watchdog || h.renewing {
		err := h.armLocked()
		f.mu.Unlock()
		if err != nil {
			f.c.log.Warn("rlock: cannot schedule the lease check", "lock", h.key.name, "err", err)
		}
		return
	}
	h.renewing = true
	// While the renewal is batched and in flight, the timer guards the lease's local end.
	if tm, err := f.c.timer.NewTimeout(h, h.expireAt()-now); err == nil {
		h.tm = tm
	}
	f.mu.Unlock()
	f.wd.add(h)
}

// dropLocked removes a hold that ends without a release.
func (f *family) dropLocked(h *famHold) {
	h.state = famHoldGone
	h.stopTimerLocked()
	if f.holds[h.key] == h {
		delete(f.holds, h.key)
	}
}

// lost reports a hold that ended without a release: its held context is cancelled with cause.
func (f *family) lost(h *famHold, cause error) {
	h.cancel(cause)
	f.c.obs.Lost(LostEvent{Name: h.key.name, Owner: h.key.owner, Cause: cause})
	f.c.log.Warn("rlock: lock no longer held", "lock", h.key.name, "owner", h.key.owner, "cause", cause)
}

// dropAll drops every local hold of name (any owner) of the given kinds, as a force unlock does.
func (f *family) dropAll(name string, kinds ...famHoldKind) {
	var gone []*famHold
	f.mu.Lock()
	for k, h := range f.holds {
		if k.name != name || h.state != famHoldHeld {
			continue
		}
		for _, kind := range kinds {
			if k.kind == kind {
				f.dropLocked(h)
				gone = append(gone, h)
			}
		}
	}
	f.mu.Unlock()
	for _, h := range gone {
		f.lost(h, ErrLockLost)
	}
}

// The hold is the parent of its held context: never cancelled itself, it carries the owner (as a pinned owner, so
// every lock of this package, the plain lock included, acquires and releases as that owner with it) and passes
// every other value lookup to the acquiring context.

// Deadline reports no deadline: the lease's end is reported by cancellation, with a cause.
func (h *famHold) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns nil: the held context above the hold is the one cancelled.
func (h *famHold) Done() <-chan struct{} { return nil }

// Err returns nil.
func (h *famHold) Err() error { return nil }

// Value returns the owner for the owner key and otherwise what the acquiring context holds.
func (h *famHold) Value(key any) any {
	switch key.(type) {
	case ownerKey:
		return pinnedOwner(h.key.owner)
	case famHoldCtxKey:
		return h
	}
	return h.parent.Value(key)
}

// famHoldCtxKey finds the famHold of a held context.
type famHoldCtxKey struct{}

// String names the held lock, for context printing.
func (h *famHold) String() string { return "rlock.Held(" + h.key.name + ", " + h.key.owner + ")" }

var (
	_ context.Context = (*famHold)(nil)
	_ timer.Task      = (*famHold)(nil)
)

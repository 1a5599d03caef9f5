package rlock

import (
	"context"
	"time"

	"github.com/locksmith-go/locksmith/timer"
)

// holdKind says which layout a held lock has on the server, and so how it is renewed and released. Every lock of
// the package is held through the same hold; only these differ.
type holdKind uint8

const (
	// kindPlain: the plain lock's HASH <name>, field <owner> -> hold count. Lock and FencedLock.
	kindPlain holdKind = iota
	// kindFair: the plain lock's HASH, released by the fair lock's script (which wakes the head of its queue).
	kindFair
	// kindRead: a read-write lock's read holds: field <owner> -> count, one key {name}:<owner>:rwlock_timeout:<n>
	// per hold with that hold's lease.
	kindRead
	// kindWrite: a read-write lock's write hold: field <owner>:write -> count.
	kindWrite
)

// field is the hash field that records owner's holds of this kind.
func (k holdKind) field(owner string) string {
	if k == kindWrite {
		return writeField(owner)
	}
	return owner
}

// rwLayout reports whether the kind lives in a read-write lock's hash, whose lease is the longest of its holds':
// an acquire, a renewal or a partial release never shortens it.
func (k holdKind) rwLayout() bool { return k == kindRead || k == kindWrite }

// holdState is the life cycle of a held lock. Legal transitions, each under the shard mutex:
//
//	holdHeld      -> holdReleasing  the last hold's Unlock started (renewal cancelled at that moment)
//	holdReleasing -> holdGone       the release completed (or failed): the hold left the map
//	holdHeld      -> holdGone       lost (a renewal found it gone), expired locally, force-unlocked, or Close
type holdState uint8

const (
	holdHeld holdState = iota
	holdReleasing
	holdGone
)

// holdKey identifies a held lock locally: one lock name, one hash field (the owner, or <owner>:write for a write
// hold, so that an owner's read and write holds of one read-write lock are two holds, as on the server).
type holdKey struct{ name, field string }

// hold is one lock held by one owner through this client, whatever the kind of lock: Redisson's ExpirationEntry,
// plus the held context.
//
// Memory is the point of its layout (issue 5: at most 0.5 KB of client heap per held watchdog lock). A held lock
// costs this struct (128 bytes: keep it there), the context.WithCancelCause pair made over it (the cancelCtx and its
// cancel func), the owner string, one timer.Timeout (64 B) and a map entry; no goroutine, no channel until someone
// calls Done on the held context. The hold itself is the parent of the held context (it implements context.Context
// without cancellation), so no extra value context is needed to carry the owner, and it is the timer Task of its
// own timeout, so scheduling allocates nothing more. What differs between kinds of locks is the kind, one byte in
// what would otherwise be padding.
type hold struct {
	c      *Client
	name   string
	owner  string
	parent context.Context // the acquiring context: its values are visible through the held context, its cancellation is not
	held   context.Context // context.WithCancelCause(h): what the acquire returned
	cancel context.CancelCauseFunc

	// Guarded by the shard mutex (kind: set at creation, never changed; it sits here to fill padding).
	state    holdState
	watchdog bool          // renewed by the watchdog (acquired without a lease at least once)
	renewing bool          // a renewal of this hold is in a batch, pending or in flight
	kind     holdKind      // the lock's layout: how it is renewed and released
	count    int32         // the owner's hold count, as the server last reported it
	lease    time.Duration // the lease the server re-arms on a partial release (watchdog timeout or last lease)
	deadline time.Duration // on c.now(): the lease surely ends on the server no earlier than this
	acquired time.Duration // on c.now(): first acquisition, for ReleasedEvent.Held
	tm       *timer.Timeout
	release  *unlockOp // the final release in flight (state holdReleasing)
}

// key is the hold's key in its shard's map.
func (h *hold) key() holdKey { return holdKey{h.name, h.kind.field(h.owner)} }

// newHoldLocked creates the hold of a lock just granted to owner, registers it and arms its timer, so that the
// renewal (or the lease's local end) is scheduled before the acquire completes (Redisson #6483). lease is the lease
// the grant applied, sentAt when the granting command was sent. Called with the shard mutex held.
func (c *Client) newHoldLocked(sh *shard, kind holdKind, name, own string, parent context.Context, count int64,
	lease time.Duration, watchdog bool, sentAt time.Duration) (*hold, error) {
	h := &hold{c: c, name: name, owner: own, parent: parent, kind: kind, count: int32(count), lease: lease,
		watchdog: watchdog, deadline: sentAt + lease, acquired: sentAt}
	h.held, h.cancel = context.WithCancelCause(h)
	if err := h.armLocked(); err != nil {
		return nil, err
	}
	sh.holds[h.key()] = h
	return h, nil
}

// reenterLocked records a re-entry granted to an existing hold: the server's count, and the lease the acquire
// re-armed. A watchdog re-entry of a lease lock starts the watchdog (as Redisson's scheduleExpirationRenewal does).
func (h *hold) reenterLocked(count int64, lease time.Duration, watchdog bool, sentAt time.Duration) error {
	// Replies of concurrent re-entries (an owner shared by goroutines) may arrive out of order: the server's count
	// only grows across them, so the largest is the latest.
	h.count = max(h.count, int32(count))
	h.lease = lease
	if end := sentAt + lease; !h.kind.rwLayout() || end > h.deadline {
		// The plain layout's PEXPIRE sets the lease; a read-write lock keeps the longer one.
		h.deadline = end
	}
	h.watchdog = h.watchdog || watchdog
	if h.renewing {
		return nil // the renewal in flight re-arms the timer when it completes
	}
	h.stopTimerLocked()
	return h.armLocked()
}

// armLocked schedules the hold's next timer event: the next renewal (watchdog locks), or the local end of the
// lease (lease locks), whichever comes first.
func (h *hold) armLocked() error {
	d := h.expireAt() - h.c.now()
	if h.watchdog {
		d = min(d, h.c.cfg.renewEvery)
	}
	tm, err := h.c.timer.NewTimeout(h, d)
	if err != nil {
		return err
	}
	h.tm = tm
	return nil
}

// expireAt is when the held context is cancelled with ErrLeaseExpired unless a renewal was confirmed: slightly
// before the lease can end on the server, so that the cancellation, which the timer may deliver up to a tick late,
// never comes after another owner could have been let in. The margin is two timer ticks plus 1% of the lease
// (clock-rate differences between hosts are far smaller), capped at a tenth of the lease for very short leases.
func (h *hold) expireAt() time.Duration {
	margin := min(2*timer.DefaultTick+h.lease/100, h.lease/10)
	return h.deadline - margin
}

// stopTimerLocked cancels the hold's pending timeout, if any. A timeout that already fired is recognised as stale
// by Run (it is no longer h.tm).
func (h *hold) stopTimerLocked() {
	if h.tm != nil {
		h.tm.Cancel()
		h.tm = nil
	}
}

// Run is the hold's timer task: a watchdog renewal fell due, or the lease reached its local end. It runs on the
// timer's worker and only hands the renewal to the watchdog's batch.
func (h *hold) Run(t *timer.Timeout) {
	c := h.c
	sh := c.shard(h.name)
	sh.mu.Lock()
	if h.tm != t || h.state != holdHeld {
		sh.mu.Unlock()
		return
	}
	h.tm = nil
	now := c.now()
	if now >= h.expireAt() {
		c.dropLocked(sh, h)
		sh.mu.Unlock()
		c.lost(h, ErrLeaseExpired)
		return
	}
	if !h.watchdog || h.renewing {
		// A lease lock re-entered with a longer lease, or a renewal still in flight: wait for the new end.
		err := h.armLocked()
		sh.mu.Unlock()
		if err != nil {
			c.log.Warn("rlock: cannot schedule the lease check; the lock stays held until its lease ends",
				"lock", h.name, "owner", h.owner, "err", err)
		}
		return
	}
	h.renewing = true
	end := h.expireAt()
	sh.mu.Unlock()
	// While the renewal is batched and in flight, the batch's guard watches the end of the lease (see watchdog).
	c.wd.add(h, end)
}

// dropLocked removes a hold that ends without a release (lost, expired, force-unlocked).
func (c *Client) dropLocked(sh *shard, h *hold) {
	h.state = holdGone
	h.stopTimerLocked()
	if k := h.key(); sh.holds[k] == h {
		delete(sh.holds, k)
	}
}

// dropAll drops every local hold of the lock name whose kind is one of kinds, whoever the owner, as a force
// unlock does: their renewals stop and their held contexts are cancelled with ErrLockLost.
func (c *Client) dropAll(sh *shard, name string, kinds ...holdKind) {
	var gone []*hold
	sh.mu.Lock()
	for k, h := range sh.holds {
		if k.name != name || h.state != holdHeld {
			continue
		}
		for _, kind := range kinds {
			if h.kind == kind {
				c.dropLocked(sh, h)
				gone = append(gone, h)
				break
			}
		}
	}
	sh.mu.Unlock()
	for _, h := range gone {
		c.lost(h, ErrLockLost)
	}
}

// lost reports a hold that ended without a release: it cancels the held context with cause and tells the
// observer and the log.
func (c *Client) lost(h *hold, cause error) {
	h.cancel(cause)
	c.obs.Lost(LostEvent{Name: h.name, Owner: h.owner, Cause: cause})
	c.log.Warn("rlock: lock no longer held", "lock", h.name, "owner", h.owner, "cause", cause)
}

// The hold is the parent of its held context: a context.Context that is never cancelled (so WithCancelCause
// starts no goroutine and registers nothing anywhere), carries the owner, and passes every other value lookup to
// the acquiring context.

// Deadline reports no deadline: the lease's end is reported by cancellation, with a cause.
func (h *hold) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns nil: the hold itself is never cancelled; the held context above it is.
func (h *hold) Done() <-chan struct{} { return nil }

// Err returns nil.
func (h *hold) Err() error { return nil }

// Value returns the hold for the owner key, and otherwise what the acquiring context holds. Every lock of the
// package reads the owner from it, so a held context of any lock acquires and releases any other lock as the same
// owner.
func (h *hold) Value(key any) any {
	if _, ok := key.(ownerKey); ok {
		return h
	}
	return h.parent.Value(key)
}

// String names the held lock, for context printing.
func (h *hold) String() string { return "rlock.Held(" + h.name + ", " + h.owner + ")" }

var (
	_ context.Context = (*hold)(nil)
	_ timer.Task      = (*hold)(nil)
)

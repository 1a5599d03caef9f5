package rlock

import (
	"context"
	"sync/atomic"
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
// and the held context the acquire returned (the hold is that context: see Err).
//
// Memory is the point of its layout (the requirement: at most 0.5 KB of client heap per held watchdog lock). A held
// lock costs this struct (128 bytes: keep it there), the owner string, one timer.Timeout (64 B) and a map entry; no
// goroutine, and no channel or cancel context until someone asks the held context for them (Done, context.Cause, a
// context derived from it: see canceller), which then costs the context.WithCancelCause pair made over the hold (the
// cancelCtx and its cancel func, 96 B) and a 24 B box. Making that pair at every grant cost 96 B of the ~440 B a held
// lock took (integration's BenchmarkHeldUnderWatchdog), for holders that mostly only check Err. The hold, seen as
// holdValues, is the parent of that cancel context (a context without cancellation that carries the owner and the
// acquiring context's values), so no extra value context is needed, and it is the timer Task of its own timeout, so
// scheduling allocates nothing more. What differs between kinds of locks is the kind, one byte in what would otherwise
// be padding. The release in flight (releasing) fills the struct's last 8 bytes: a shard map kept it before, at two map
// operations per Unlock.
type hold struct {
	c      *Client
	name   string
	owner  string
	parent context.Context // the acquiring context: its values are visible through the held context, its cancellation is not
	// gone is the cause the held context ended with (the lock went), set once: the first cause wins (cancel).
	gone atomic.Pointer[error]
	// cc is the held context's cancel context, made on first need (canceller); cancelled with gone's cause.
	cc atomic.Pointer[holdCancel]

	// Guarded by the shard mutex (kind: set at creation, never changed; it sits here to fill padding).
	state    holdState
	watchdog bool          // renewed by the watchdog (acquired without a lease at least once)
	renewing bool          // a renewal of this hold is in a batch, pending or in flight
	kind     holdKind      // the lock's layout: how it is renewed and released
	count    int32         // the owner's hold count, as the server last reported it
	lease    time.Duration // the lease the server re-arms on a partial release (watchdog timeout or last lease)
	// end is the local end of the lease, on c.now(): the held context ends with ErrLeaseExpired there unless a
	// confirmed command moves it (localEnd). Written under the shard mutex, read without it by Err.
	end         atomic.Int64
	confirmedAt time.Duration // on c.now(): when the last reply that moved end was applied (confirmLocked)
	acquired    time.Duration // on c.now(): first acquisition, for ReleasedEvent.Held
	tm          *timer.Timeout
	// releasing is the release of one of the hold's holds in flight (the last one: state holdReleasing): an
	// acquire or another release of the same owner waits for it (serial.go). Guarded by the shard mutex.
	releasing *unlockOp
}

// key is the hold's key in its shard's map.
func (h *hold) key() holdKey { return holdKey{h.name, h.kind.field(h.owner)} }

// newHoldLocked creates the hold of a lock just granted to owner, registers it and arms its timer, so that the
// renewal (or the lease's local end) is scheduled before the acquire completes (Redisson #6483). lease is the lease
// the grant applied, sentAt when the granting command was sent. Called with the shard mutex held.
func (c *Client) newHoldLocked(sh *shard, kind holdKind, name, own string, parent context.Context, count int64,
	lease time.Duration, watchdog bool, sentAt time.Duration) (*hold, error) {
	now := c.now()
	h := &hold{c: c, name: name, owner: own, parent: parent, kind: kind, count: int32(count), lease: lease,
		watchdog: watchdog, acquired: sentAt, confirmedAt: now}
	h.end.Store(int64(localEnd(sentAt, lease)))
	if err := h.armAtLocked(now); err != nil {
		return nil, err
	}
	sh.holds[h.key()] = h
	return h, nil
}

// reenterLocked records a re-entry granted to an existing hold: its new count (the server's for a pinned owner,
// one more than recorded otherwise: lockCall.grantLocked), and the lease the acquire re-armed. A watchdog re-entry
// of a lease lock starts the watchdog (as Redisson's scheduleExpirationRenewal does).
func (h *hold) reenterLocked(count int64, lease time.Duration, watchdog bool, sentAt time.Duration) error {
	// Replies of concurrent re-entries of a pinned owner (shared by goroutines, or Clients) may arrive out of
	// order: the server's count only grows across them, so the largest is the latest.
	h.count = max(h.count, int32(count))
	h.lease = lease
	// The plain layout's PEXPIRE sets the lease (it may shorten it); a read-write lock's acquire keeps the longer.
	h.confirmLocked(localEnd(sentAt, lease), sentAt, h.kind.rwLayout())
	h.watchdog = h.watchdog || watchdog
	h.stopTimerLocked()
	return h.armLocked()
}

// localEnd is the local end of a lease that a command sent at sentAt armed on the server: when the held context is
// cancelled with ErrLeaseExpired unless a later command is confirmed. The server counts the lease from when it ran
// the command, which is after sentAt, so sentAt+lease is the earliest it can let another owner in; the local end is
// slightly before that, so that the cancellation, which the timer may deliver up to a tick late, never comes after.
// The margin is two timer ticks plus 1% of the lease (clock-rate differences between hosts are far smaller), capped
// at a tenth of the lease for very short leases. Err does not wait for the timer: it checks the end itself.
func localEnd(sentAt, lease time.Duration) time.Duration {
	margin := min(2*timer.DefaultTick+lease/100, lease/10)
	return sentAt + lease - margin
}

// expireAt is the local end of the lease (see end). Safe without the shard mutex.
func (h *hold) expireAt() time.Duration { return time.Duration(h.end.Load()) }

// confirmLocked moves the local end of the lease after a confirmed command: end is the command's localEnd, sentAt
// when it was sent. grows says that the command never shortens the lease on the server (a read-write lock's
// acquires, and its write renewals, keep the longest), so its end can only push the local one later.
//
// Commands of one hold travel on several connections, so the server may run them in another order than their
// replies arrive: a renewal sent before a re-entry with a shorter lease may run first and be answered last, and
// its reply must not restore the longer lease the re-entry replaced. A reply may therefore set the end (shorter or
// longer) only when its command was sent after every reply applied so far had arrived — then it surely ran after
// their commands. Otherwise which of them ran last is unknown, and the earlier of the two ends is kept.
func (h *hold) confirmLocked(end, sentAt time.Duration, grows bool) {
	cur := h.expireAt()
	switch {
	case grows:
		end = max(end, cur)
	case sentAt < h.confirmedAt:
		end = min(end, cur)
	}
	h.end.Store(int64(end))
	h.confirmedAt = max(h.confirmedAt, h.c.now())
}

// renewalGrows reports whether the hold's renewal never shortens its lease on the server: true for a write hold
// (the read-write renewal only lengthens the lock's TTL); false for the plain layout, whose renewal sets the lease
// to the watchdog timeout (PEXPIRE), and for read holds, whose keys it sets so too.
func (h *hold) renewalGrows() bool { return h.kind == kindWrite }

// renewalSentLocked records that a renewal of h was sent at sentAt. From now on the server may run it at any
// moment, so where it may shorten the lease (a watchdog lock re-entered with a lease longer than the watchdog
// timeout) the local end may no longer lie beyond what it sets; its reply confirms the end (confirmLocked).
func (h *hold) renewalSentLocked(sentAt time.Duration) {
	if h.renewalGrows() {
		return
	}
	if end := localEnd(sentAt, h.c.cfg.WatchdogTimeout); end < h.expireAt() {
		h.end.Store(int64(end))
	}
}

// attemptSentLocked records that an acquire attempt of h's owner with lease is about to be sent: a re-entry,
// which sets the lease on the server (the plain layout's PEXPIRE, a shorter one too). From now on the server may
// run it at any moment, even if its reply is lost, so the local end may no longer lie beyond what it sets (as for
// a renewal: renewalSentLocked); a watchdog renews before that end. Its reply confirms the end (confirmLocked).
func (h *hold) attemptSentLocked(lease time.Duration) {
	if h.kind.rwLayout() {
		return // a read-write lock's acquire keeps the longer lease
	}
	end := localEnd(h.c.now(), lease)
	if end >= h.expireAt() {
		return
	}
	h.end.Store(int64(end))
	if h.tm != nil { // not renewing: the renewal's outcome re-arms the timer
		h.stopTimerLocked()
		if err := h.armLocked(); err != nil {
			h.c.log.Warn("rlock: cannot schedule the lease check; the held context ends when it is read",
				"lock", h.name, "owner", h.owner, "err", err)
		}
	}
}

// armLocked schedules the hold's next timer event: the next renewal (watchdog locks), or the local end of the
// lease (lease locks), whichever comes first. While a renewal is in flight the timeout watches the local end only
// (Run re-arms it until the renewal completes).
func (h *hold) armLocked() error { return h.armAtLocked(h.c.now()) }

// armAtLocked is armLocked with the clock read at now, a moment ago.
func (h *hold) armAtLocked(now time.Duration) error {
	d := h.expireAt() - now
	if h.watchdog {
		if d < 2*h.c.cfg.renewEvery && !h.renewing {
			// The server's lease is shorter than the watchdog's (a grant by a release applies the queue's
			// liveness window: lockqueue.go): renew well before it ends.
			d /= 3
		}
		d = min(d, h.c.cfg.renewEvery)
	}
	tm, err := h.c.timer.NewTimeout(h, d)
	if err != nil {
		return err
	}
	h.tm = tm
	return nil
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
	if sh.doubts != nil {
		delete(sh.doubts, h)
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
	c.obs.Lost(LostEvent{Name: h.name, Owner: h.owner, Cause: cause, Ctx: h})
	c.log.Warn("rlock: lock no longer held", "lock", h.name, "owner", h.owner, "cause", cause)
}

// The held context. The hold is the context the acquire returns. Its end is gone, set once by cancel; Err reads it
// (and checks the local end of the lease itself). What only a standard cancel context can give — a Done channel,
// the cause for context.Cause, the registration of derived contexts as its children (no goroutine) — comes from a
// context.WithCancelCause made over holdValues the first time someone asks (canceller), and cancelled with the
// hold's cause, whenever it ends, before or after.

// holdCancel is a held context's cancel context, made by canceller.
type holdCancel struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// cancel ends the held context with cause, unless it ended already (the first cause wins, as with a cancel
// context). Safe for concurrent use; it does not block.
func (h *hold) cancel(cause error) {
	if !h.gone.CompareAndSwap(nil, boxedCause(cause)) {
		return
	}
	// canceller stores cc, then loads gone; this stores gone, then loads cc: at least one of the two sees the
	// other's write and cancels (twice is harmless: the same cause).
	if hc := h.cc.Load(); hc != nil {
		hc.cancel(cause)
	}
}

// The causes a hold ends with, boxed once: gone stores a pointer, and boxing the common causes at every release
// cost an allocation per Unlock.
var (
	releasedCause     error = ErrReleased
	lockLostCause     error = ErrLockLost
	leaseExpiredCause error = ErrLeaseExpired
	closedCause       error = ErrClosed
)

// boxedCause returns a pointer to cause for hold.gone: a shared one for the package's causes.
func boxedCause(cause error) *error {
	switch cause {
	case ErrReleased:
		return &releasedCause
	case ErrLockLost:
		return &lockLostCause
	case ErrLeaseExpired:
		return &leaseExpiredCause
	case ErrClosed:
		return &closedCause
	}
	other := cause // only this branch allocates: &cause would move the parameter to the heap on every call
	return &other
}

// canceller returns the held context's cancel context, making it on first use; one made after the hold ended is
// cancelled at once with the hold's cause. Safe for concurrent use: of two racing makers, one's is kept.
func (h *hold) canceller() *holdCancel {
	if hc := h.cc.Load(); hc != nil {
		return hc
	}
	// holdValues is never cancelled: WithCancelCause registers nothing with it and starts no goroutine.
	ctx, cancel := context.WithCancelCause((*holdValues)(h))
	hc := &holdCancel{ctx: ctx, cancel: cancel}
	if !h.cc.CompareAndSwap(nil, hc) {
		return h.cc.Load() // hc was never shared: garbage
	}
	if cause := h.gone.Load(); cause != nil {
		cancel(*cause)
	}
	return hc
}

// cancelProbe tells context's own key for "the cancel context a context descends from" from other keys: a cancel
// context answers Value with itself for that key only. context.Cause and the registration of a derived context
// (WithCancel, WithTimeout, AfterFunc over the held context) look it up; the held context then makes its cancel
// context, so that they find it, and answers every other key without it. Never cancelled.
var cancelProbe, _ = context.WithCancel(context.Background())

// isCancelCtxKey reports whether key is context's key for the cancel context a context descends from.
func isCancelCtxKey(key any) bool { return cancelProbe.Value(key) == cancelProbe }

// Deadline reports no deadline. The lease's end is reported by cancellation, with a cause: it moves with every
// renewal, and a context's Deadline must give the same answer on every call.
func (h *hold) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns the channel closed when the lock stops being held (released, lost, expired, closed). The timer
// closes it at the lease's local end; Err does not wait for that. The first call makes the held context's cancel
// context (canceller).
func (h *hold) Done() <-chan struct{} { return h.canceller().ctx.Done() }

// Err returns nil while the lock is held and context.Canceled once it is not (context.Cause says why). It checks
// the local end of the lease itself, without waiting for the timer: on a starved process the timer's worker may
// run late (the chaos runs once saw a lease-end delivered 80 ms late), and a holder that checks Err before each
// step must never be told it holds the lock after that end ("never trust a lease past its end"). The first Err
// that finds the end passed ends the hold as the timer would (ErrLeaseExpired). It costs a clock reading.
// Contexts derived from the held context learn of the end by cancellation, as with Done.
func (h *hold) Err() error {
	if h.gone.Load() != nil {
		return context.Canceled
	}
	if h.c.now() < h.expireAt() {
		return nil
	}
	h.c.expireLate(h) // may find the end moved by a renewal meanwhile: then the hold lives on
	if h.gone.Load() != nil {
		return context.Canceled
	}
	return nil
}

// Value returns the hold for the owner key, the held context's cancel context for context's own key (so that
// context.Cause and derived contexts find it), and otherwise what the acquiring context holds. Every lock of the
// package reads the owner from it, so a held context of any lock acquires and releases any other lock as the same
// owner.
func (h *hold) Value(key any) any {
	if _, ok := key.(ownerKey); ok {
		return h
	}
	if isCancelCtxKey(key) {
		return h.canceller().ctx.Value(key)
	}
	return h.parent.Value(key)
}

// String names the held lock, for context printing.
func (h *hold) String() string { return "rlock.Held(" + h.name + ", " + h.owner + ")" }

// expireLate ends a hold whose lease reached its local end before its timeout fired (Err found it so): what Run
// does at that end.
func (c *Client) expireLate(h *hold) {
	sh := c.shard(h.name)
	sh.mu.Lock()
	held := h.state == holdHeld
	expired := held && c.now() >= h.expireAt() // a renewal may have moved the end meanwhile
	if expired {
		c.dropLocked(sh, h)
	}
	sh.mu.Unlock()
	switch {
	case expired:
		c.lost(h, ErrLeaseExpired)
	case !held:
		// Released or lost, and its cancellation (with that cause) may not have been made yet; the lease has
		// ended all the same. The first cause given wins.
		h.cancel(ErrLeaseExpired)
	}
}

// holdValues is the hold seen as the parent of its cancel context: a context that is never cancelled (so
// WithCancelCause starts no goroutine and registers nothing anywhere), carries the owner, and passes every other
// value lookup to the acquiring context. It is the same pointer under another type: no allocation.
type holdValues hold

// Deadline reports no deadline.
func (v *holdValues) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns nil: never cancelled.
func (v *holdValues) Done() <-chan struct{} { return nil }

// Err returns nil.
func (v *holdValues) Err() error { return nil }

// Value returns the hold for the owner key, and otherwise what the acquiring context holds.
func (v *holdValues) Value(key any) any {
	if _, ok := key.(ownerKey); ok {
		return (*hold)(v)
	}
	return v.parent.Value(key)
}

// String names the held lock.
func (v *holdValues) String() string { return (*hold)(v).String() }

var (
	_ context.Context = (*hold)(nil)
	_ context.Context = (*holdValues)(nil)
	_ timer.Task      = (*hold)(nil)
)

// LeaseEnd returns the local end of the lease the held context holds: the moment its held context is cancelled
// with ErrLeaseExpired unless a renewal moves it first. It is counted from when the command that armed the lease
// was sent — for a lock handed over by another holder's release, when the waiter's last attempt was sent — less a
// margin (two timer ticks plus 1 % of the lease), so it never comes after the moment the server may let another
// owner in, whatever the network and the waiter's wake-up cost. A fixed lease's end does not move; a watchdog
// lock's moves with every confirmed renewal. Use it to schedule the end of work that must stop before a fixed
// lease runs out. It returns false when ctx is not a held context of a single lock (a MultiLock's or RedLock's held
// context has no single lease), when the lock is no longer held, and when ctx is nil. It does not block.
func LeaseEnd(ctx context.Context) (time.Time, bool) {
	if ctx == nil || ctx.Value(multiKey{}) != nil {
		return time.Time{}, false
	}
	h, ok := ctx.Value(ownerKey{}).(*hold)
	if !ok || h.Err() != nil {
		return time.Time{}, false
	}
	return h.c.epoch.Add(h.expireAt()), true
}

package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// Releasing a hold, for every kind of lock. A release is conditional on the hold count this client knows the owner
// has (see the package documentation, "Release and retries"), so it is safe to send again after an ambiguous
// failure. Every kind's release script answers alike: nil = the owner does not hold the lock; 0 = one hold
// released, others remain; 1 = the last hold released; -n = the owner holds n, not the count expected, nothing
// changed.

// unlockOp is one release of one hold of (kind, name, owner) in progress. Its future is the caller's; acquirers of
// the same owner wait on it while the last hold is being released (see lockCall.start).
type unlockOp struct {
	p     future.Promise[struct{}]
	c     *Client
	sh    *shard
	name  string    // the lock's name (other kinds' release keys are derived from it at each attempt)
	owner string    // <clientUUID>:<ownerID>
	h     *hold     // the local hold, nil when this client records none for the owner
	next  *lockCall // the waiter of this client the release names (state wGranting: queue.takeNextLocked), or nil
	// sync is the blocking Unlock this op is part of (nil for UnlockAsync and the package's own releases): its
	// Relay is the op's driver, and its Get drives each attempt (a resend after a corrected count or a transport
	// failure included).
	sync *syncUnlockOp

	expect int64  // hold count the owner is expected to have; 0: unknown (no local hold)
	lease  string // lease re-armed by a partial release
	// sentAt is when the attempt in flight was sent, or the earlier one that may have run (retried); for a last
	// hold's release without a next waiter, which does not need it, when the Unlock began (set only for the
	// Observer: ReleasedEvent.Took).
	sentAt time.Duration
	// readLeft is what a read release reported of the owner's remaining read holds: the longest one's remaining
	// lease (0 or less: none left on the server). Valid when hasReadLeft.
	readLeft time.Duration

	kind        holdKind
	hasReadLeft bool         // readLeft was reported
	handedOver  bool         // the release granted the lock to a queued waiter (of this client or another)
	leftClient  bool         // a plain lock's last release passed it out of the client (freed, or another's)
	final       bool         // releases the last local hold: h is holdReleasing
	retried     bool         // an earlier attempt may have run on the server
	from        expectSource // where expect came from
	attempts    uint8        // retries made
	unheld      bool         // a lost grant's, queued while the owner held nothing here (releaseLostGrant)
	unsent      bool         // a lost grant's, not to be sent: the owner has a queued call (ownerQueuedLocked)
	// observed: an acquire of the same owner found this op in flight or queued and waits for its future
	// (serial.go), so the op is not recycled. Guarded by the shard mutex.
	observed bool
}

// expectSource says where an unlockOp's expected count came from, and so how a reply with another count is read.
type expectSource uint8

const (
	expectRecorded expectSource = iota // the count this client recorded
	// expectAdopted: corrected once from the server's count (the owner holds the lock through another client too).
	expectAdopted
	// expectLostGrant: the release of a re-entry whose outcome was unknown, expecting the recorded count plus that
	// grant (orphan.go); another count is never adopted: it shows that the grant was not made.
	expectLostGrant
	// expectLostGrantUnsent: such a release whose first attempt is still to be sent: it goes after RetryDelay, as
	// any retry (orphan.go), and is expectLostGrant from then on.
	expectLostGrantUnsent
)

// syncUnlockOp is the unlockOp of a blocking Unlock with the Relay its Get drives (unlockOp.sync points at it),
// so that a sequential caller reads the release's reply itself (see syncLockCall). It is recycled (recycle.go).
type syncUnlockOp struct {
	unlockOp
	steps     future.Relay
	refs      recycleRefs
	onAttempt func(resp.Value, error) // onAnyReply, bound once and kept across reuses (recycle.go)
}

// relay is the op's driver: its blocking Unlock's Relay, or nil.
func (op *unlockOp) relay() *future.Relay {
	if op.sync == nil {
		return nil
	}
	return &op.sync.steps
}

// unlock starts the release of one hold of kind of the lock name by owner and returns it; its future is the
// caller's. via is the hold the caller's
// held context is (nil if none): when it is a hold of this very lock that is still held, it is the one the map
// has, and the lookup is skipped. blocking says that the caller waits with Get on the op's future at once (a
// blocking Unlock) and then calls waited: the release's replies are left to that Get, and the op is recycled
// (syncUnlockOp). ahead puts the release before the owner's releases queued meanwhile, when it must wait: the
// give-back of a grant its caller never saw, which the releases its callers make do not count. It does not block.
func (c *Client) unlock(kind holdKind, name string, sh *shard, owner string, via *hold,
	blocking, ahead bool) *unlockOp {
	var op *unlockOp
	if blocking {
		op = &newSyncUnlockOp().unlockOp
	} else {
		op = &unlockOp{}
	}
	op.c, op.sh, op.kind, op.owner, op.name = c, sh, kind, owner, name
	if c.observed {
		op.sentAt = c.now()
	}
	sh.mu.Lock()
	h := via
	// A held hold is the one its key maps to (it leaves the map when it stops being held); a held context of
	// another lock, or one that ended, leaves the lookup to the map.
	if h == nil || h.state != holdHeld || h.kind != kind || h.name != name || h.owner != owner {
		h = sh.holds[holdKey{name, kind.field(owner)}]
	}
	if h != nil && h.state == holdHeld && sh.busyLocked(h) {
		// Another command that changes the owner's count is in flight: this release goes after it (serial.go).
		sh.queueReleaseLocked(h, op, ahead)
		sh.mu.Unlock()
		return op
	}
	op.beginLocked(h)
	sh.mu.Unlock()
	op.send()
	return op
}

// beginLocked prepares the release of one hold of h (nil, or not held any more: nothing recorded here), just
// before it is sent: the expected count is the one the client knows now, a last hold's renewal stops. Called with
// the shard mutex held.
func (op *unlockOp) beginLocked(h *hold) {
	c := op.c
	held := h != nil && h.state == holdHeld
	if op.unheld && held {
		h.count++ // the grant, if it was made, is one more hold of the owner than the callers'
	}
	switch op.unheld = false; {
	case !held && op.from == expectLostGrantUnsent:
		// A lost grant when the owner holds nothing here: its only hold, if made (releaseLostGrant).
		op.expect, op.lease = 1, c.cfg.watchdogMillis
		op.unsent = op.sh.ownerQueuedLocked(op.kind, op.name, op.owner)
		op.sh.serialOfLocked(holdKey{op.name, op.kind.field(op.owner)}).lost = op
	case !held:
		// Nothing recorded here: the owner may hold it through another client (WithOwner). Unconditional.
		op.lease = c.cfg.watchdogMillis
	case h.count > 1:
		op.h, op.expect, op.lease = h, int64(h.count), c.leaseArg(h.lease)
		h.count--
		h.releasing = op
	case op.from == expectLostGrantUnsent:
		// A lost grant's release whose grant h's count no longer includes (lostGrantsQueuedLocked keeps it there;
		// this guards the invariant): it expects the callers' holds plus the grant and never ends the hold.
		op.h, op.expect, op.lease = h, int64(h.count)+1, c.leaseArg(h.lease)
		h.releasing = op
	default:
		op.h, op.expect, op.lease, op.final = h, int64(h.count), c.leaseArg(h.lease), true
		// Cancel the renewal first (Redisson #7272): nothing renews this lock once its release has started.
		h.state = holdReleasing
		h.stopTimerLocked()
		h.releasing = op
		if op.kind == kindPlain {
			if q := op.sh.lockQueues[op.name]; q != nil {
				if op.next = q.takeNextLocked(); op.next != nil {
					op.next.prefer = q.preferNextLocked()
				}
			}
		}
	}
}

// unlockHeld releases one hold through a held context, for a grant whose caller will never see it (the call was
// abandoned while the grant was in flight). Errors are logged.
func (c *Client) unlockHeld(held context.Context) {
	h, ok := held.Value(ownerKey{}).(*hold)
	if !ok || c.closed.Load() {
		return
	}
	// A re-entry's grant goes back before the releases its owner's callers queued meanwhile: those end the holds
	// they were granted, and the last of them ends the held context (orphan_reentry.go does the same).
	op := c.unlock(h.kind, h.name, c.shard(h.name), h.owner, h, false, true)
	op.p.Future().OnComplete(func(_ struct{}, err error) {
		switch {
		case err == nil:
			c.orphanSettled(h.name, h.owner, true, nil)
		case errors.Is(err, ErrNotHeld):
			// Gone already (expired, force-unlocked): nothing to release.
		case op.expect > 0 && (errors.Is(err, conn.ErrConnLost) || errors.Is(err, conn.ErrUnavailable)):
			// The release goes on in the background (finish), which counts its outcome.
		default:
			c.orphanSettled(h.name, h.owner, false, err)
		}
	})
}

// releaseKeys returns the keys of kind's release script for the lock name (and owner: a read hold's keys).
func (c *Client) releaseKeys(kind holdKind, name, owner string) []string {
	switch kind {
	case kindFair:
		return fairKeys(name)
	case kindRead:
		return []string{name, prefixName(rwChannelPrefix, name), rwHoldPrefix(name, owner), hashTag(name)}
	case kindWrite:
		return []string{name, prefixName(rwChannelPrefix, name)}
	}
	k := plainKeys(name)
	return k[:]
}

// releaseCmd builds kind's release of one hold of owner, expecting expect holds (0: any), re-arming lease (in
// milliseconds) while holds remain.
func (c *Client) releaseCmd(kind holdKind, keys []string, owner string, expect int64,
	lease string) (*conn.Script, []string, []string) {
	exp := strconv.FormatInt(expect, 10) // small counts come from strconv's static table: no allocation
	switch kind {
	case kindFair:
		return fairReleaseScript, keys, []string{owner, exp, lease, scripts.UnlockMessage, c.pub()}
	case kindRead:
		return rwReadReleaseScript, keys, []string{owner, exp, scripts.UnlockMessage, c.pub()}
	case kindWrite:
		return rwWriteReleaseScript, keys, []string{writeField(owner), exp, lease, scripts.WriteUnlockMessage, c.pub()}
	}
	return releaseScript, keys, []string{owner, exp, lease, c.pub()}
}

// leaseArg formats a lease for a script, without allocating for the watchdog timeout.
func (c *Client) leaseArg(d time.Duration) string {
	if d == c.cfg.WatchdogTimeout {
		return c.cfg.watchdogMillis
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// send sends one release attempt: the first, a resend with a corrected count (from the reply's callback) or a
// retry after a transport failure (from the timer's worker). A blocking Unlock's attempt is the step its relay
// forwards to (future.Follow): the Get drives it, or, once that Get has parked, the relay marks it unattended and
// the transport reads the reply by itself; the reply is read once and the callback registered once either way.
func (op *unlockOp) send() {
	c := op.c
	if op.from == expectLostGrantUnsent && op.sendLater() {
		return
	}
	// What a partial release re-arms, and the lease of a next waiter it grants, count from the sending of the
	// attempt that ran. After an ambiguous failure that may be the earlier attempt, whose effect a retry only
	// reports (its count no longer matches; it finds the waiter granted): sentAt then stays the earlier sending.
	// A last release without a next waiter re-arms nothing.
	if !op.retried && (!op.final || op.next != nil) {
		op.sentAt = c.now()
	}
	if op.kind == kindPlain {
		// The lock's hot path, written out so that the arguments stay on the stack.
		exp := strconv.FormatInt(op.expect, 10)
		if next := op.next; next != nil {
			k := plainKeys(op.name) // on the stack: Eval encodes it at once
			future.Follow(op.relay(), c.conn.Eval(background, releaseScript, k[:], op.owner, exp, op.lease,
				next.owner, next.specArg(next.prefer), c.pub()), op.callback())
			return
		}
		k := plainKeys(op.name)
		future.Follow(op.relay(), c.conn.Eval(background, releaseScript, k[:], op.owner, exp, op.lease,
			c.pub()), op.callback())
		return
	}
	s, keys, args := c.releaseCmd(op.kind, c.releaseKeys(op.kind, op.name, op.owner), op.owner, op.expect, op.lease)
	future.Follow(op.relay(), c.conn.Eval(background, s, keys, args...), op.callback())
}

// onAnyReply is onRelease: the one callback a recycled op binds once.
func (op *unlockOp) onAnyReply(v resp.Value, err error) { op.onRelease(v, err) }

// callback is onAnyReply as a callback: a blocking Unlock's, bound once, or a new method value.
func (op *unlockOp) callback() func(resp.Value, error) {
	if op.sync != nil {
		return op.sync.onAttempt
	}
	return op.onAnyReply
}

// retry resends the release after a transport failure when that is safe: always when it was never sent, and after
// an ambiguous failure only when the release is conditional on the expected count (a retry of an attempt that ran
// then changes nothing).
func (op *unlockOp) retry(err error) bool {
	c := op.c
	if op.from == expectLostGrant {
		return op.retryLostGrant(err)
	}
	if c.closed.Load() || int(op.attempts) >= c.cfg.RetryAttempts {
		return false
	}
	ambiguous := errors.Is(err, conn.ErrConnLost)
	if !errors.Is(err, conn.ErrUnavailable) && !(ambiguous && op.expect > 0) {
		return false
	}
	op.attempts++
	if ambiguous {
		op.retried = true
	}
	return c.after(c.cfg.RetryDelay, func(closed bool) {
		if closed {
			op.finish(false, ErrClosed)
			return
		}
		op.send()
	})
}

// releaseOutcome interprets a release reply: released (the last hold went), err (ErrNotHeld), or resend (the
// expected count was corrected from the server's: send again). A plain lock's release that handed the lock to a
// queued waiter of this client answers that waiter's nonce: it is settled here.
func (op *unlockOp) releaseOutcome(v resp.Value) (released bool, err error, resend bool) {
	switch {
	case v.Type == resp.BulkString && !v.Null && op.kind == kindPlain:
		op.handedOver = true
		if n, err := strconv.ParseUint(v.Str, 10, 64); err == nil && op.next != nil && op.next.hasNonce(n, v.Str) {
			next := op.next
			op.next = nil
			next.grantedByRelease(op.sentAt)
		} else {
			op.grantLocal(v)
		}
		return true, nil, false
	case v.Type == resp.Integer && v.Int == 2 && op.kind == kindPlain:
		op.handedOver = true // to a waiter of another client
		return true, nil, false
	case v.Null:
		if op.retried && op.expect == 1 {
			return true, nil, false // an earlier attempt deleted it
		}
		return false, ErrNotHeld, false
	case v.Type != resp.Integer:
		return false, &resp.TypeError{Want: "release result", Got: v.Type}, false
	case v.Int < 0:
		if op.retried {
			return false, nil, false // an earlier attempt decremented it
		}
		if op.from == expectRecorded {
			// The owner holds a different count than this client recorded (it also holds the lock through
			// another client): release one of the holds the server has.
			op.from = expectAdopted
			op.expect = -v.Int
			return false, nil, true
		}
		return false, fmt.Errorf("%w: the hold count keeps changing under another client of the same owner", ErrNotHeld), false
	case v.Int == 1:
		return true, nil, false
	}
	return false, nil, false
}

func (op *unlockOp) onRelease(v resp.Value, err error) {
	if err != nil {
		if op.retry(err) {
			return
		}
		if op.from == expectLostGrant {
			op.finishLostGrant(grantNotMade, op.c.mapErr(err))
			return
		}
		op.resumeNext()
		op.finish(false, op.c.mapErr(err))
		return
	}
	v = op.c.published(op.sh, op.name, v)
	if op.kind == kindRead && v.Type == resp.Array && len(v.Elems) == 2 && v.Elems[1].Type == resp.Integer {
		// [0, left]: one read hold released, the owner keeps others, the longest of which lasts left ms more.
		op.readLeft, op.hasReadLeft = serverMillis(v.Elems[1].Int), true
		v = v.Elems[0]
	}
	if op.from == expectLostGrant {
		op.finishLostGrant(op.lostGrantOutcome(v))
		return
	}
	released, rerr, resend := op.releaseOutcome(v)
	op.resumeNext() // the release did not grant its next waiter (or it was settled above)
	// Freed, or handed to another client's waiter (a grant to a waiter of this client answers its nonce).
	op.leftClient = released && op.final && op.kind == kindPlain && v.Type == resp.Integer
	if !resend && op.final && !released && rerr == nil && op.from == expectAdopted && op.orphansLeft() {
		// The owner's last hold here, and the server holds more: orphaned grants of this client (a re-entry whose
		// outcome was unknown). Release them too, one conditional release at a time.
		op.expect--
		resend = true
	}
	if resend {
		op.send()
		return
	}
	op.finish(released, rerr)
}

// resumeNext gives the waiter the release named back to waiting, when the release did not grant it.
func (op *unlockOp) resumeNext() {
	if next := op.next; next != nil {
		op.next = nil
		next.resumeAfterRelease()
	}
}

// finish records the outcome locally, cancels the held context of a last hold, and completes the caller's future.
func (op *unlockOp) finish(released bool, err error) {
	c, sh, h := op.c, op.sh, op.h
	if err == ErrNotHeld && h != nil {
		// The client held it until now: the server lost it (expired, force-unlocked) before this release.
		err = &unlockLostError{cause: ErrLockLost}
	} else {
		err = notLockError(op.name, err)
	}
	var cause, lostCause error
	var next []*unlockOp
	observed := false
	// A release that failed on the transport after its retries may have run or not: the holds it was meant to end
	// are orphaned (orphan.go).
	unsure := op.expect > 0 && (errors.Is(err, conn.ErrConnLost) || errors.Is(err, conn.ErrUnavailable))
	if h != nil {
		sh.mu.Lock()
		observed = op.observed
		if h.releasing == op {
			h.releasing = nil
		}
		switch {
		case op.final:
			if q := sh.lockQueues[op.name]; op.leftClient && q != nil {
				// The lock left this client: its run of grants to its own waiters (queue.takeNextLocked) is over,
				// and the next grant it receives starts a new one. The run's bound (runBound) is for clients that
				// do not queue and counts the time the lock passes between holders of this client without being
				// free; while it passes through the server's queue, the queue's own bound applies. Counted from
				// the client's first run ever, it would cut short, about once a second, the run of a client that
				// just received the lock from another, and send its waiters to the back of the queue.
				q.runStart, q.run = 0, 0
			}
			h.state = holdGone
			if k := h.key(); sh.holds[k] == h {
				delete(sh.holds, k)
			}
			cause = ErrReleased
			if errors.Is(err, ErrNotHeld) {
				cause = ErrLockLost
			}
			if d := sh.doubtOfLocked(h); d != 0 {
				delete(sh.doubts, h)
				if d == doubtShared && err == nil && !released && op.from == expectAdopted {
					// The server held more than recorded, and they may be another client's holds as the pinned
					// owner: the owner's callers here end their holds, the server keeps those.
					err = &StillHeldError{Name: h.name, Owner: h.owner, Holds: op.expect - 1}
				}
			}
		case h.state != holdHeld:
		case err == nil:
			lostCause = op.partialReleasedLocked(released)
		case errors.Is(err, ErrNotHeld):
			c.dropLocked(sh, h)
			lostCause = ErrLockLost
		case unsure:
			// The server may still count the hold this release was meant to end: the Unlock that ends the owner's
			// holds here takes it back (or reports it, for an owner another client may share).
			d := doubtShared
			if c.madeOwner(h.owner) {
				d = doubtOwned
			}
			sh.doubtLocked(h, d)
		}
		if len(sh.serial) != 0 {
			next = sh.nextReleasesLocked(h.key())
		}
		sh.mu.Unlock()
	}
	if cause != nil {
		h.cancel(cause)
	}
	if cause != nil && c.observed {
		now := c.now()
		c.obs.Released(ReleasedEvent{Name: h.name, Owner: h.owner, Held: now - h.acquired,
			HandOff: op.handedOver, Err: err, Took: now - op.sentAt, Ctx: h})
	}
	if lostCause != nil {
		c.lost(h, lostCause)
	}
	if unsure && op.final && h != nil {
		// Nobody holds or renews it any more: release it in the background until the server answers or its lease
		// has passed. The caller is told the release failed.
		c.releaseOrphan(op.kind, h.name, h.owner, op.expect, h.lease)
	}
	complete(op.c.log, &op.p, struct{}{}, err)
	if op.sync != nil && !observed {
		op.sync.refs.release(op.sync)
	}
	for _, op := range next {
		op.send()
	}
}

// waited is the end of a blocking Unlock's Get: the caller no longer touches the op.
func (op *unlockOp) waited() {
	if op.sync != nil {
		op.sync.refs.release(op.sync)
	}
}

// partialReleasedLocked records a release that left the owner holds (it was not its last local one): the local
// end of the lease follows what the release did on the server. It returns the cause when the hold turns out to be
// gone. Called with the shard mutex held.
func (op *unlockOp) partialReleasedLocked(released bool) (lostCause error) {
	c, sh, h := op.c, op.sh, op.h
	end := h.expireAt()
	switch {
	case released && h.kind != kindRead:
		// The release deleted the owner's last hold although this client counted more: the server had fewer (the
		// expected count was corrected from the server's, or another release of the owner ran first). Nothing is
		// held any more; keeping the hold would renew nothing and report a lock the owner no longer has.
		c.dropLocked(sh, h)
		return ErrLockLost
	case !h.kind.rwLayout():
		// The plain layout's partial release re-arms the lease.
		h.confirmLocked(localEnd(op.sentAt, h.lease), op.sentAt, false)
	case h.kind != kindRead:
		// A write release keeps the longer of the remaining and the re-armed lease: the end stands.
	case released:
		// The read release deleted the lock: the owner's other read holds had all expired on the server.
		c.dropLocked(sh, h)
		return ErrLockLost
	case op.hasReadLeft && op.readLeft <= 0:
		// The lock stays (other readers, or the owner's write hold), but none of the owner's read holds does.
		c.dropLocked(sh, h)
		return ErrLockLost
	case op.hasReadLeft:
		// Each read hold has its own lease: releasing the longest one (holds go newest first) leaves the owner's
		// read lock ending with the longest that remains, sooner than the local end said.
		h.confirmLocked(localEnd(op.sentAt, op.readLeft), op.sentAt, false)
	}
	if h.expireAt() < end {
		h.stopTimerLocked()
		if err := h.armLocked(); err != nil {
			c.log.Warn("rlock: cannot schedule the lease check; Err still reports the lease's end",
				"lock", h.name, "owner", h.owner, "err", err)
		}
	}
	return nil
}

// mapErr turns the transport's "client closed" into this package's.
func (c *Client) mapErr(err error) error {
	if errors.Is(err, conn.ErrClosed) {
		return ErrClosed
	}
	return err
}

// grantLocal settles the waiter of this client that a release granted the lock to: v holds its nonce. The grant
// came after the waiter's last refused attempt ran, and its lease counts from there (grantedByOther). A waiter that
// is no longer here left the queue, and its leave releases the grant.
func (op *unlockOp) grantLocal(v resp.Value) {
	nonce, err := strconv.ParseUint(v.Str, 10, 64)
	if err != nil {
		return
	}
	sh := op.sh
	sh.mu.Lock()
	q := sh.lockQueues[op.name]
	var w *waiter
	var granted bool
	if q != nil && !q.dead {
		w, granted = q.deliverLocked(nonce, v.Str, true)
	}
	sh.mu.Unlock()
	w.act(granted)
}

package rlock

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// Ambiguous outcomes and orphaned grants. An acquire attempt that was written but never answered (the connection
// dropped, or was reset after its response timeout) may or may not have run: the server may have granted a lock
// that no caller will ever hold. Such a grant is an orphan, and so is a grant that arrives for a call that was
// abandoned meanwhile (its context ended, its wait ran out). The client takes every orphan back: the release is
// conditional on the owner's hold count (see "Release and retries" in the package documentation), so it is safe
// to send again after any failure, and it is sent again until the server answers it or the grant's lease has
// passed, whichever comes first — a grant that was never made is then found absent and nothing changes. Its first
// attempt, too, waits RetryDelay, as any retry: the server may not have read yet what the dropped connection had
// written before it closed, and the release must come after the acquire it takes back. The caller
// of a call whose outcome is unknown gets an *OutcomeUnknownError, never ErrNotAcquired: it holds nothing, and the
// client is releasing what it may have been granted.
//
// Which hold is the orphan:
//
//   - an owner made for the call (no owner in its context): any hold under it is the grant, released as a hold
//     count of 1 — or, for the plain and fenced locks, by the queue's leave script, which also takes the call's
//     entry out of the server's queue (lockqueue.go);
//   - an owner of a held context of this Client: it holds, through this Client, the count the Client records (0
//     without a hold of this lock), so the grant is that count plus one: the release expects it, and a server that
//     answers with the recorded count shows that nothing was granted. Such a release of a re-entry is one of the
//     owner's serialized commands (serial.go), ahead of any release queued meanwhile;
//   - an owner pinned with WithOwner: other Clients may hold the lock as the same owner, and their holds cannot be
//     told from the grant, so the grant, if any, is left to its lease (and counted as such). A later Unlock that ends
//     the owner's holds through this Client and finds more holds on the server reports them (*StillHeldError).

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

func (c callbackObserver) Orphan(e OrphanEvent) { future.RunAsCallback(func() { c.o.Orphan(e) }) }

// orphanCounts are the Client's counts of orphaned grants (Stats).
type orphanCounts struct {
	released, expired atomic.Int64
}

// orphanSettled records the end of an orphaned grant: released, or left to its lease (err says why, if known).
func (c *Client) orphanSettled(name, owner string, released bool, err error) {
	if released {
		c.orphans.released.Add(1)
	} else {
		c.orphans.expired.Add(1)
		if !c.closed.Load() {
			c.log.Warn("rlock: an orphaned grant (an acquire whose outcome was unknown, or abandoned) could not "+
				"be released; it ends with its lease", "lock", name, "owner", owner, "err", err)
		}
	}
	if c.observed {
		c.obs.Orphan(OrphanEvent{Name: name, Owner: owner, Released: released, Err: err})
	}
}

// releaseOrphan releases one hold of kind granted to owner that no caller holds, expecting the owner to hold
// expect (the grant included), and sends it again after every transport failure until the server answers or the
// grant's lease (counted from now) has passed. A reply that finds another count (or none) shows that the grant was
// never made — unless an earlier attempt may have run, which then released it.
func (c *Client) releaseOrphan(kind holdKind, name, owner string, expect int64, lease time.Duration) {
	c.releaseOrphans(kind, name, owner, expect, lease, false)
}

// releaseOrphans is releaseOrphan, and with all, it goes on releasing the owner's holds one by one (each
// conditional on the count the last reply left) until none is left.
func (c *Client) releaseOrphans(kind holdKind, name, owner string, expect int64, lease time.Duration, all bool) {
	if c.closed.Load() {
		c.orphanSettled(name, owner, false, ErrClosed)
		return
	}
	o := &orphanRelease{c: c, kind: kind, name: name, owner: owner, expect: expect, until: c.now() + lease,
		keys: c.releaseKeys(kind, name, owner), all: all}
	if !c.after(c.cfg.RetryDelay, func(closed bool) {
		if closed {
			c.orphanSettled(name, owner, false, ErrClosed)
			return
		}
		o.send()
	}) {
		o.send()
	}
}

// orphanRelease is one releaseOrphan in progress.
type orphanRelease struct {
	c      *Client
	kind   holdKind
	name   string
	owner  string
	keys   []string
	expect int64
	until  time.Duration // on c.now(): the grant's lease has passed
	ran    bool          // an earlier attempt may have run on the server
	all    bool          // release every hold of the owner (releaseOrphans)
}

func (o *orphanRelease) send() {
	c := o.c
	s, keys, args := c.releaseCmd(o.kind, o.keys, o.owner, o.expect, c.cfg.watchdogMillis)
	c.conn.Eval(background, s, keys, args...).OnComplete(o.onReply)
}

func (o *orphanRelease) onReply(v resp.Value, err error) {
	c := o.c
	if err != nil {
		ran := o.ran
		o.ran = o.ran || errors.Is(err, conn.ErrConnLost) // before the resend, which may run at once
		if retryOrphan(c, err, o.until, o.send) {
			return
		}
		o.ran = ran
		c.orphanSettled(o.name, o.owner, false, c.mapErr(err))
		return
	}
	released := releaseFound(v)
	partial := v
	if v.Type == resp.Array && len(v.Elems) == 2 {
		partial = v.Elems[0] // a read release: [0, left]
	}
	if released && o.all && o.expect > 1 && partial.Type == resp.Integer && partial.Int == 0 {
		o.expect-- // one released, others remain: the next one
		o.ran = false
		o.send()
		return
	}
	if released || o.ran {
		c.orphanSettled(o.name, o.owner, true, nil)
	}
}

// retryOrphan schedules send after RetryDelay when err is a transport failure and until has not passed, and
// reports whether it did.
func retryOrphan(c *Client, err error, until time.Duration, send func()) bool {
	if c.closed.Load() || c.now()+c.cfg.RetryDelay >= until ||
		!(errors.Is(err, conn.ErrConnLost) || errors.Is(err, conn.ErrUnavailable)) {
		return false
	}
	return c.after(c.cfg.RetryDelay, func(closed bool) {
		if closed {
			send = nil
		}
		if send != nil {
			send()
		}
	})
}

// releaseFound reports whether a release script's reply says that it released a hold: 0 (others remain), 1 (the
// last), 2 or a nonce (the last, handed to a waiter), or a read release's [0, left].
func releaseFound(v resp.Value) bool {
	switch {
	case v.Null:
		return false
	case v.Type == resp.Integer:
		return v.Int >= 0
	case v.Type == resp.BulkString:
		return true
	case v.Type == resp.Array && len(v.Elems) == 2:
		return releaseFound(v.Elems[0])
	}
	return false
}

// unknownOutcome is the error of lc when the outcome of its attempt is unknown: cause is the transport's error, or
// errWaitInFlight.
func (lc *lockCall) unknownOutcome(cause error) error {
	// A reply still to come is seen, whoever the owner: a grant it brings is given back.
	return &OutcomeUnknownError{Name: lc.lo.name, Owner: lc.owner, Releasing: cause == errWaitInFlight || !lc.pinned(),
		Err: cause}
}

// pinned reports whether lc's owner is one this Client did not make (pinned with WithOwner, also through the held
// context of such an acquire): other Clients may hold as it.
func (lc *lockCall) pinned() bool {
	return !lc.fresh && !lc.sh.c.madeOwner(lc.owner)
}

// madeOwner reports whether owner is an id this Client made (mintOwnerID). Another Client acts as it only if a
// caller pinned it there explicitly.
func (c *Client) madeOwner(owner string) bool {
	if len(owner) <= len(c.id) || owner[len(c.id)] != ':' || owner[:len(c.id)] != c.id {
		return false
	}
	n, err := strconv.ParseUint(owner[len(c.id)+1:], 10, 64)
	return err == nil && n > mintedOwnerBase && n <= mintedOwnerBase+c.nextOwner.Load()
}

// lostInFlight takes back what an attempt of lc that failed ambiguously may have left on the server: its entry in
// a server queue (the plain and fenced locks' leave, the fair lock's), and the grant it may have made (see the top
// of this file for which hold that is).
func (lc *lockCall) lostInFlight() {
	c := lc.sh.c
	switch {
	case lc.serverQueue:
		lc.leave(true) // releases a grant to an owner made for the call, and one announced to the call
	case lc.lo.rules != nil:
		lc.lo.rules.left(lc)
	}
	switch {
	case lc.fresh:
		if !lc.serverQueue {
			c.releaseOrphan(lc.lo.kind, lc.lo.name, lc.owner, 1, lc.lease)
		}
	case lc.pinned():
		c.orphanSettled(lc.lo.name, lc.owner, false, errPinnedOrphan)
		lc.doubtHold(doubtShared)
	default:
		lc.releaseLostGrant()
	}
}

// errPinnedOrphan says why a grant to a pinned owner is left to its lease.
var errPinnedOrphan = errors.New("rlock: the owner is pinned (WithOwner): a grant cannot be told from its other holds")

// doubt says whose the holds are that the server may have beyond a hold's recorded count (shard.doubts).
type doubt uint8

const (
	// doubtOwned: orphaned grants of this client (its owner's re-entry whose release could not be confirmed): the
	// Unlock that ends the owner's holds here releases them too.
	doubtOwned doubt = iota + 1
	// doubtShared: a pinned owner's re-entry whose outcome is unknown, which cannot be told from other Clients'
	// holds as the same owner: that Unlock reports what it finds left (StillHeldError).
	doubtShared
)

// doubtHold records d for the hold lc's owner has of lc's lock, if any.
func (lc *lockCall) doubtHold(d doubt) {
	sh := lc.sh
	sh.mu.Lock()
	if h := lc.heldLocked(); h != nil && h.state == holdHeld {
		sh.doubtLocked(h, d)
	}
	sh.mu.Unlock()
}

// doubtLocked records that the server may hold h more times than recorded, by d (shared wins: those holds cannot
// all be released). The shard mutex is held.
func (sh *shard) doubtLocked(h *hold, d doubt) {
	if sh.doubts == nil {
		sh.doubts = make(map[*hold]doubt)
	}
	sh.doubts[h] = max(sh.doubts[h], d)
}

// doubtOfLocked returns h's doubt, 0 when there is none. The shard mutex is held.
func (sh *shard) doubtOfLocked(h *hold) doubt {
	if sh.doubts == nil {
		return 0
	}
	return sh.doubts[h]
}

// releaseLostGrant releases the grant an ambiguous attempt of lc, whose owner is a held context's of this Client,
// may have made: with a hold of the lock here, a re-entry (the recorded count plus one, released as one of the
// owner's serialized commands, ahead of the releases queued meanwhile); without, a first hold.
func (lc *lockCall) releaseLostGrant() {
	sh, c := lc.sh, lc.sh.c
	sh.mu.Lock()
	h := lc.heldLocked()
	if h == nil || h.state != holdHeld || c.closed.Load() {
		sh.mu.Unlock()
		c.releaseOrphan(lc.lo.kind, lc.lo.name, lc.owner, 1, lc.lease)
		return
	}
	h.count++ // the grant, if it was made; the release takes it back
	op := &unlockOp{c: c, sh: sh, kind: h.kind, owner: h.owner, keys: c.releaseKeys(h.kind, h.name, h.owner),
		from: expectLostGrantUnsent}
	if sh.busyLocked(h) {
		s := sh.serialOfLocked(h.key())
		s.waiting = append([]*unlockOp{op}, s.waiting...)
		sh.mu.Unlock()
		return
	}
	op.beginLocked(h)
	sh.mu.Unlock()
	op.send()
}

// sendLater sends the first attempt of a lost grant's release (op.from == expectLostGrantUnsent) after
// RetryDelay, and reports whether it scheduled it (false: send now).
func (op *unlockOp) sendLater() bool {
	op.from = expectLostGrant
	return op.c.after(op.c.cfg.RetryDelay, func(closed bool) {
		if closed {
			op.finishLostGrant(grantNotMade, ErrClosed)
			return
		}
		op.send()
	})
}

// lostGrant is what the release of a lost re-entry grant found.
type lostGrant uint8

const (
	grantNotMade       lostGrant = iota // the owner holds the recorded count: nothing was granted
	grantReleasedEarly                  // an earlier attempt, whose reply was lost, released it
	grantReleased                       // released now, and the owner keeps its recorded holds
	grantReleasedLast                   // released now, and it was the owner's only hold: the recorded ones were gone
)

// lostGrantOutcome interprets the reply to the release of a lost re-entry grant (op.from == expectLostGrant,
// expecting the recorded count plus that grant); err is ErrNotHeld when the owner holds nothing any more. A count
// other than expected is the server's: a lower one is recorded, a higher one is doubted (the holds beyond the
// callers' are reported by the Unlock that ends them: see StillHeldError).
func (op *unlockOp) lostGrantOutcome(v resp.Value) (lostGrant, error) {
	switch {
	case v.Null:
		return grantNotMade, ErrNotHeld
	case v.Type == resp.Array && len(v.Elems) == 2:
		return op.lostGrantOutcome(v.Elems[0])
	case v.Type == resp.BulkString:
		return grantReleasedLast, nil
	case v.Type != resp.Integer:
		return grantNotMade, &resp.TypeError{Want: "release result", Got: v.Type}
	case v.Int == 0:
		return grantReleased, nil
	case v.Int > 0:
		return grantReleasedLast, nil
	}
	held := -v.Int // the server's count
	if op.h != nil && held != op.expect-1 {
		op.sh.mu.Lock()
		switch h := op.h; {
		case h.state != holdHeld:
		case held < int64(h.count):
			h.count = int32(held)
		case held > int64(h.count):
			op.sh.doubtLocked(h, doubtOwned)
		}
		op.sh.mu.Unlock()
	}
	if op.retried {
		return grantReleasedEarly, nil
	}
	return grantNotMade, nil
}

// retryLostGrant schedules a resend of a lost re-entry grant's release after a transport failure, for as long as
// the owner's hold is held here and its lease has not passed locally — but no more than RetryAttempts times once a
// release of the owner waits behind it: the grant is then doubted, and the Unlock that ends the owner's holds
// releases it with them. It reports whether it did.
func (op *unlockOp) retryLostGrant(err error) bool {
	sh := op.sh
	sh.mu.Lock()
	held, until := op.h.state == holdHeld, op.h.expireAt()
	waited := false
	if s := sh.serial[op.h.key()]; s != nil && len(s.waiting) > 0 {
		waited = true
	}
	sh.mu.Unlock()
	if !held || (waited && int(op.attempts) >= op.c.cfg.RetryAttempts) {
		return false
	}
	// Written before the resend, which may run at once.
	attempts, retried := op.attempts, op.retried
	if op.attempts < 255 {
		op.attempts++
	}
	op.retried = op.retried || errors.Is(err, conn.ErrConnLost)
	if !retryOrphan(op.c, err, until, op.send) {
		op.attempts, op.retried = attempts, retried
		return false
	}
	return true
}

// finishLostGrant records the end of a lost re-entry grant's release: the hold's lease re-armed by a partial
// release, the hold dropped when the owner turned out to hold nothing, or doubted when the release could not be
// confirmed; then the owner's next queued release goes.
func (op *unlockOp) finishLostGrant(g lostGrant, err error) {
	c, sh, h := op.c, op.sh, op.h
	var lostCause error
	sh.mu.Lock()
	if h.releasing == op {
		h.releasing = nil
	}
	switch {
	case h.state != holdHeld:
	case g == grantReleased:
		lostCause = op.partialReleasedLocked(false)
	case g == grantReleasedLast || errors.Is(err, ErrNotHeld):
		c.dropLocked(sh, h)
		lostCause = ErrLockLost
	case err != nil:
		sh.doubtLocked(h, doubtOwned)
	}
	stillHeld := h.state == holdHeld
	var next []*unlockOp
	if len(sh.serial) != 0 {
		next = sh.nextReleasesLocked(h.key())
	}
	sh.mu.Unlock()
	if lostCause != nil {
		c.lost(h, lostCause)
	}
	switch {
	case g != grantNotMade:
		c.orphanSettled(h.name, h.owner, true, nil)
	case err != nil && !errors.Is(err, ErrNotHeld) && !stillHeld:
		c.orphanSettled(h.name, h.owner, false, err)
	}
	// A hold still held is doubted: the Unlock that ends it releases the grant, and counts it (orphansLeft).
	op.p.Complete(struct{}{}, err)
	for _, op := range next {
		op.send()
	}
}

// orphansLeft reports whether the holds the server still has after op, the release of its owner's last hold here,
// are orphaned grants of this client (doubtOwned) that op should release too.
func (op *unlockOp) orphansLeft() bool {
	sh := op.sh
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if op.h == nil || op.expect <= 1 || sh.doubtOfLocked(op.h) != doubtOwned {
		return false
	}
	sh.mu.Unlock()
	op.c.orphanSettled(op.h.name, op.h.owner, true, nil) // released by the resend that follows
	sh.mu.Lock()
	return true
}

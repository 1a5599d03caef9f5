package rlock

import (
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/locksmith-go/locksmith/conn"
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
// written before it closed, and the release must come after the acquire it takes back. The caller of a call whose
// outcome is unknown gets an *OutcomeUnknownError (outcome.go), never ErrNotAcquired: it holds nothing, and the
// client is releasing what it may have been granted. A hold whose Unlock failed on the transport is orphaned too,
// and released the same way (unlock.go, finish).
//
// Which hold is the orphan:
//
//   - an owner made for the call (no owner in its context): any hold under it is the grant, released as a hold
//     count of 1 — or, for the plain and fenced locks, by the queue's leave script, which also takes the call's
//     entry out of the server's queue (lockqueue.go);
//   - an owner of a held context of this Client: it holds, through this Client, the count the Client records (0
//     without a hold of this lock), so the grant is that count plus one: the release expects it, and a server that
//     answers with the recorded count shows that nothing was granted. Such a release is one of the owner's
//     serialized commands (serial.go): a re-entry's goes ahead of any release queued meanwhile; a first hold's
//     goes after the owner's attempts in flight, and the owner's next attempts (a caller trying again after the
//     unknown outcome) wait for it, since their grant would be the one hold it expects; it is not sent while a
//     call of the owner waits in the lock's queue, whose next attempt re-enters the grant (orphan_reentry.go);
//   - an owner this Client did not make (pinned with WithOwner): other Clients may hold the lock as the same owner,
//     and their holds cannot be told from the grant, so the grant, if any, is left to its lease (and counted as
//     such). A later Unlock that ends the owner's holds through this Client and finds more holds on the server
//     reports them (*StillHeldError).

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
	v = c.published(nil, o.name, v)
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
	case lc.serverQueue && !lc.fresh && !lc.pinned():
		// Releases a grant announced to the call, found by the call's nonce: a release of the lost grant that
		// took that grant first (releaseLostGrant) leaves the announcement's record behind, which the leave would
		// then take for a grant made since to the owner's next attempt. So the leave counts as an attempt of the
		// owner in flight (serial.go), and the lost grant's release waits for it.
		s := lc.sh.countLeave(lc.holdKey())
		lc.leave(true, nil, func() { lc.sh.attemptSettled(s) })
	case lc.serverQueue:
		lc.leave(true, nil, nil) // releases a grant to an owner made for the call, and one announced to the call
	case lc.lo.rules != nil:
		lc.lo.rules.left(lc, nil)
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

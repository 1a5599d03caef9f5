package rlock

import (
	"errors"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/resp"
)

// The orphaned grant of a re-entry (see orphan.go): the owner holds the lock through this Client, so the grant is
// one more hold than recorded. Its release is one of the owner's serialized commands (an unlockOp expecting the
// recorded count plus the grant), and what it cannot confirm is remembered on the hold (a doubt) for the Unlock that
// ends the owner's holds here.

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
// may have made, as one of the owner's serialized commands. With a hold of the lock here it is a re-entry: the
// recorded count plus one, released ahead of the releases queued meanwhile. Without, it is the owner's only hold,
// and nothing tells it from a hold granted to the owner's next attempt (a caller that tries again after the
// unknown outcome): the release waits for the owner's attempts in flight, and the owner's attempts wait for it
// (holdSerial.lost); a hold granted before its turn counts it as a re-entry's.
func (lc *lockCall) releaseLostGrant() {
	sh, c := lc.sh, lc.sh.c
	if c.closed.Load() {
		c.releaseOrphan(lc.lo.kind, lc.lo.name, lc.owner, 1, lc.lease)
		return
	}
	sh.mu.Lock()
	h := lc.heldLocked()
	op := &unlockOp{c: c, sh: sh, kind: lc.lo.kind, owner: lc.owner, name: lc.lo.name,
		from: expectLostGrantUnsent}
	if h != nil && h.state == holdHeld {
		h.count++ // the grant, if it was made; the release takes it back
		if sh.busyLocked(h) {
			sh.queueReleaseLocked(h, op, true)
			sh.mu.Unlock()
			return
		}
	} else if key := lc.holdKey(); (h != nil && h.releasing != nil) || sh.serialBusyLocked(key) {
		op.unheld = true
		s := sh.serialOfLocked(key)
		s.waiting = append(s.waiting, op)
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
	if op.unsent {
		op.finishLostGrant(grantNotMade, nil)
		return true
	}
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
		case held < int64(h.count) && op.sh.lostGrantsQueuedLocked(h) == 0:
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

// lostGrantsQueuedLocked counts the releases of h's lost re-entry grants still queued, each of whose grants h's
// count includes until it begins. A lower count from the server cannot be recorded while there are any: which of
// their grants were made is not known, and recording the server's count would take their grants out of h's count
// while their releases still expect them in it — the last of them would then expect only the callers' holds, and
// release one of those. They correct the count in turn; the last one records the server's. The shard mutex is
// held.
func (sh *shard) lostGrantsQueuedLocked(h *hold) int {
	n := 0
	if s := sh.serial[h.key()]; s != nil {
		for _, op := range s.waiting {
			if op.from == expectLostGrantUnsent && !op.unheld {
				n++
			}
		}
	}
	return n
}

// retryLostGrant schedules a resend of a lost re-entry grant's release after a transport failure, for as long as
// the owner's hold is held here and its lease has not passed locally — but no more than RetryAttempts times once a
// release of the owner waits behind it: the grant is then doubted, and the Unlock that ends the owner's holds
// releases it with them. It reports whether it did.
func (op *unlockOp) retryLostGrant(err error) bool {
	if op.h == nil {
		// Sent unconditionally (the owner's hold had ended: see finishLostGrant): a resend after an ambiguous
		// failure could release a hold granted since. The grant, if any, is left to its lease.
		return false
	}
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
//
// op has no hold when the owner's hold here had ended before the release's turn came (it waited behind the
// owner's other commands): the release then went out unconditionally, as for an owner this client records nothing
// of (shard.nextReleasesLocked), and only its outcome is counted.
func (op *unlockOp) finishLostGrant(g lostGrant, err error) {
	c, sh, h := op.c, op.sh, op.h
	var lostCause error
	stillHeld := false
	sh.mu.Lock()
	if h != nil {
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
		stillHeld = h.state == holdHeld
	}
	key := holdKey{op.name, op.kind.field(op.owner)}
	if h == nil {
		if h, lostCause = sh.lostGrantSettledLocked(op, key, g); lostCause != nil {
			g = grantNotMade // the hold it released was not an orphan
		}
	}
	var next []*unlockOp
	if len(sh.serial) != 0 {
		next = sh.nextReleasesLocked(key)
	}
	sh.mu.Unlock()
	if lostCause != nil {
		c.lost(h, lostCause)
	}
	switch {
	case g != grantNotMade:
		c.orphanSettled(op.name, op.owner, true, nil)
	case err != nil && !errors.Is(err, ErrNotHeld) && !stillHeld:
		c.orphanSettled(op.name, op.owner, false, err)
	}
	// A hold still held is doubted: the Unlock that ends it releases the grant, and counts it (orphansLeft).
	complete(c.log, &op.p, struct{}{}, err)
	for _, op := range next {
		op.send()
	}
}

// ownerQueuedLocked reports whether a call of owner waits in this client's queue of the lock name (plain and fenced).
// A release of another client may hand the lock to it at any moment (its attempts do not go out while a lost
// grant's release is in flight, but that hand-over needs none), and a lost grant's release that expects the
// owner's only hold cannot tell that grant from its own. So such a release is not sent: if the lost grant was
// made, the owner holds the lock, nobody can hand it over, and the queued call's next attempt re-enters it (the
// hold it records is the caller's, the rest doubted and released by its Unlock: lockCall.grantLocked), or, if that
// call gives up first, the grant ends with its lease. The shard mutex is held.
func (sh *shard) ownerQueuedLocked(kind holdKind, name, owner string) bool {
	q := sh.lockQueues[name]
	if q == nil || kind != kindPlain {
		return false
	}
	for w := q.head; w != nil; w = w.next {
		if lc, ok := w.call.(*lockCall); ok && lc.owner == owner {
			return true
		}
	}
	return false
}

// lostGrantSettledLocked ends op, the release of a lost grant begun while the owner held nothing here, as the
// release the owner's attempts wait for (holdSerial.lost). A hold of the owner recorded here now was granted while
// op was in flight, without an attempt of the owner (those waited): a grant a release of another client handed to
// a call of the owner waiting in the lock's queue, possible only if the lost grant had not been made (the owner
// would have held the lock). When op then found one hold and released it, it released that grant: the hold is
// dropped, and returned with the cause of its loss. The shard mutex is held.
func (sh *shard) lostGrantSettledLocked(op *unlockOp, key holdKey, g lostGrant) (*hold, error) {
	s := sh.serial[key]
	if s == nil || s.lost != op {
		return nil, nil
	}
	s.lost = nil
	sh.dropSerialIfIdleLocked(s)
	if h := sh.holds[key]; g == grantReleasedLast && h != nil && h.state == holdHeld && h.releasing == nil {
		op.c.dropLocked(sh, h)
		return h, ErrLockLost
	}
	return nil, nil
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

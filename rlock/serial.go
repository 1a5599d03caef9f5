package rlock

// Serializing the commands that change an owner's hold count. A release is conditional on the count the client
// knows the owner has (see the package documentation, "Release and retries"), so it must not run on the server
// while another command of the same owner changes that count: an acquire attempt of the owner still in flight, or
// another release. Goroutines that share an owner (a held context passed around, WithOwner) can start such commands
// at once; the client then sends them one after another, per lock and owner (holdKey):
//
//   - a release waits while an acquire attempt of the owner or another release is in flight, or releases are
//     queued before it; it is queued here and begun (its expected count taken) when its turn comes;
//   - an acquire attempt waits while a release of the owner is in flight or queued (lockCall.start, lockCall.send);
//   - acquire attempts go together: acquires commute, and each reply reports the count it made.
//
// An owner made for one call (the calls that take no owner from their context) cannot meet another command of its
// own: its attempts skip all of this, and a release that finds nothing in flight is sent at once. Nothing is
// allocated unless commands actually meet.

// holdSerial is what one lock and owner have in flight or waiting, while they have any.
type holdSerial struct {
	key      holdKey
	acquires int         // acquire attempts in flight
	waiting  []*unlockOp // releases queued, in order
	// lost is the release in flight of a grant that an attempt of the owner, whose outcome was unknown, may have
	// made while the owner held nothing here (orphan_reentry.go). It expects the owner's only hold, which a grant
	// made since would be, so until it settles no attempt of the owner goes out.
	lost *unlockOp
	free *holdSerial // next on the shard's free list, while unused
}

// busyLocked reports whether a release of h must wait: a release of h or an acquire attempt of its owner is in
// flight, or releases are queued before it. The shard mutex is held.
func (sh *shard) busyLocked(h *hold) bool {
	return h.releasing != nil || sh.serialBusyLocked(h.key())
}

// queueReleaseLocked queues op, a release of h, to be begun and sent when nothing else of its owner is in flight:
// after the releases queued before it, or before them when ahead. The shard mutex is held.
func (sh *shard) queueReleaseLocked(h *hold, op *unlockOp, ahead bool) {
	s := sh.serialOfLocked(h.key())
	if ahead {
		s.waiting = append([]*unlockOp{op}, s.waiting...)
		return
	}
	s.waiting = append(s.waiting, op)
}

// serialBusyLocked reports whether a release of key's owner must wait although the owner holds nothing here: an
// acquire attempt of the owner or a lost grant's release is in flight, or releases are queued. The shard mutex is
// held.
func (sh *shard) serialBusyLocked(key holdKey) bool {
	if len(sh.serial) == 0 {
		return false
	}
	s := sh.serial[key]
	return s != nil && (s.acquires > 0 || len(s.waiting) > 0 || s.lost != nil)
}

// releaseAheadLocked returns the release an acquire attempt of key's owner must wait for: the one in flight, or
// else the last one queued; nil when there is none. The shard mutex is held.
func (sh *shard) releaseAheadLocked(key holdKey) *unlockOp {
	if h := sh.holds[key]; h != nil && h.releasing != nil {
		return h.releasing
	}
	if s := sh.serial[key]; s != nil {
		if len(s.waiting) > 0 {
			return s.waiting[len(s.waiting)-1]
		}
		return s.lost
	}
	return nil
}

// nextReleasesLocked begins the first queued release of key once nothing of its owner is in flight, and returns it
// for the caller to send after releasing the shard mutex; none when there is none or its turn has not come. When
// the owner no longer holds the lock here (released, lost, closed), every queued release is begun at once: each
// goes out unconditionally, as for an owner this client records nothing of, and nothing will be in flight to begin
// them later — up to the first release of a lost grant, which expects the owner's only hold and goes alone
// (holdSerial.lost). The shard mutex is held.
func (sh *shard) nextReleasesLocked(key holdKey) []*unlockOp {
	if len(sh.serial) == 0 {
		return nil
	}
	s := sh.serial[key]
	h := sh.holds[key]
	if s == nil || s.acquires > 0 || len(s.waiting) == 0 || s.lost != nil || (h != nil && h.releasing != nil) {
		return nil
	}
	n := len(s.waiting)
	if h != nil && h.state == holdHeld {
		n = 1
	} else {
		for i, op := range s.waiting {
			if op.from == expectLostGrantUnsent {
				n = i + 1
				break
			}
		}
	}
	ops := make([]*unlockOp, n)
	copy(ops, s.waiting)
	clear(s.waiting[:n])
	s.waiting = s.waiting[n:]
	for _, op := range ops {
		op.beginLocked(h)
	}
	sh.dropSerialIfIdleLocked(s)
	return ops
}

// serialOfLocked returns key's entry, making one if there is none: from the shard's free list when it has one, so
// that an owner whose every acquire is counted (re-entries, WithOwner) does not allocate one per attempt.
func (sh *shard) serialOfLocked(key holdKey) *holdSerial {
	s := sh.serial[key]
	if s == nil {
		if sh.serial == nil {
			sh.serial = make(map[holdKey]*holdSerial)
		}
		if s = sh.freeSerial; s != nil {
			sh.freeSerial, s.free = s.free, nil
		} else {
			s = &holdSerial{}
		}
		s.key = key
		sh.serial[key] = s
	}
	return s
}

// dropSerialIfIdleLocked removes s from the shard once nothing is in flight or queued for its owner, onto the free
// list: nobody refers to it any more (a counted attempt keeps acquires above zero).
func (sh *shard) dropSerialIfIdleLocked(s *holdSerial) {
	if s.acquires == 0 && len(s.waiting) == 0 && s.lost == nil && sh.serial[s.key] == s {
		delete(sh.serial, s.key)
		*s = holdSerial{waiting: s.waiting[:0], free: sh.freeSerial}
		sh.freeSerial = s
	}
}

// holdKey is the key of the hold lc's owner has, or will have, of lc's lock.
func (lc *lockCall) holdKey() holdKey { return holdKey{lc.lo.name, lc.lo.kind.field(lc.owner)} }

// countAttempt counts an acquire attempt of lc's owner as in flight, just before it is sent, and reports true; or,
// when a release of the owner is in flight or queued, arranges for the attempt to be sent once that release has
// settled and reports false. Only for an owner that did not come with the call (not fresh).
func (lc *lockCall) countAttempt() bool {
	sh := lc.sh
	key := lc.holdKey()
	sh.mu.Lock()
	if op := sh.releaseAheadLocked(key); op != nil {
		op.observed = true // its future outlives the release: not recycled
		sh.mu.Unlock()
		op.p.Future().OnComplete(func(struct{}, error) { lc.send() })
		return false
	}
	if h := sh.holds[key]; h != nil && h.state == holdHeld {
		h.attemptSentLocked(lc.lease)
	}
	s := sh.serialOfLocked(key)
	s.acquires++
	lc.counted = s
	sh.mu.Unlock()
	return true
}

// countLeave counts the leave of a call of key's owner as an acquire attempt in flight, until attemptSettled.
func (sh *shard) countLeave(key holdKey) *holdSerial {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := sh.serialOfLocked(key)
	s.acquires++
	return s
}

// takeCounted returns the count lc's attempt in flight is part of, if any, and forgets it. Called with the
// attempt's reply, before the reply is settled (after that, lc may be recycled).
func (lc *lockCall) takeCounted() *holdSerial {
	s := lc.counted
	lc.counted = nil
	return s
}

// attemptSettled ends the count of an acquire attempt in flight (s nil: it was not counted), once its reply was
// settled (a grant it made is in the hold's count), and sends the release that waited for it, if any.
func (sh *shard) attemptSettled(s *holdSerial) {
	if s == nil {
		return
	}
	sh.mu.Lock()
	s.acquires--
	next := sh.nextReleasesLocked(s.key)
	sh.dropSerialIfIdleLocked(s)
	sh.mu.Unlock()
	for _, op := range next {
		op.send()
	}
}

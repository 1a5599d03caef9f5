package timer

import "math/bits"

// The wheel has two levels, both owned by the worker, both in t.wheel:
//
//   - the wheel proper, buckets [0, size): bucket i holds timeouts whose target tick T (the tick their deadline
//     falls in) is congruent to i and less than one rotation ahead of the tick being processed;
//   - the far ring, buckets [size, 2*size): far bucket size+j holds timeouts at least one rotation ahead whose
//     rotation (T / size) is congruent to j.
//
// At the start of each rotation the worker cascades that rotation's far bucket into the wheel. A timeout is thus
// visited about three times in its life (placed, cascaded, expired) however far away it is — Netty's single level
// revisits it every rotation, which made 1,000,000 timeouts an hour away cost the worker a wake-up and a bucket scan
// every tick — and ticks with nothing to do can be slept through. A far bucket also holds timeouts of later far
// rounds (more than size rotations ahead); the cascade leaves them where they are.

// place puts a scheduled timeout into the wheel, or into the far ring if it is a rotation or more ahead of tick.
// A timeout whose target tick has passed goes into tick's bucket, which is expired right after.
func (t *Timer) place(to *Timeout, tick int64) {
	target := max(to.deadline/t.tick, tick)
	i := target & t.mask
	if target-tick > t.mask {
		i = t.mask + 1 + (target>>t.shift)&t.mask
	}
	t.wheel[i].add(to)
	t.occupied[i>>6] |= 1 << (i & 63)
}

// cascade moves the timeouts of rotation rot (and of any earlier rotation, after a catch-up skipped their start)
// from their far bucket into the wheel, placing them relative to tick, and unlinks cancelled ones it meets.
func (t *Timer) cascade(rot, tick int64) {
	i := t.mask + 1 + rot&t.mask
	b := &t.wheel[i]
	for to := b.ring.next; to != &b.ring; {
		next := to.next
		switch to.loadState() {
		case stateCancelled:
			unlink(to)
		case stateScheduled:
			if (to.deadline/t.tick)>>t.shift <= rot {
				unlink(to)
				t.place(to, tick)
			}
		}
		to = next
	}
	if b.empty() {
		t.markEmpty(i)
	}
}

// transfer places up to workPerTick queued additions, oldest first; the rest wait for the next tick.
func (t *Timer) transfer(tick int64) {
	for range t.workPerTick {
		if t.addBacklog == nil {
			if t.addBacklog = reverse(t.adds.takeAll()); t.addBacklog == nil {
				return
			}
		}
		to := t.addBacklog
		t.addBacklog = to.link
		// Cleared before the state CAS publishes the timeout to Cancel, which may reuse link for the cancel queue;
		// also keeps a long-lived timeout from retaining the dropped ones queued behind it.
		to.link = nil
		if !to.casState(stateInit, stateScheduled) {
			continue // cancelled while queued: drop it
		}
		t.place(to, tick)
	}
}

// processCancels unlinks up to limit cancelled timeouts from their buckets, so their memory is released; the rest
// wait for the next tick (expiry and cascades also unlink cancelled timeouts they meet).
func (t *Timer) processCancels(limit int) {
	for range limit {
		if t.cancelBacklog == nil {
			if t.cancelBacklog = t.cancels.takeAll(); t.cancelBacklog == nil {
				return
			}
		}
		to := t.cancelBacklog
		t.cancelBacklog = to.link
		to.link = nil // cancelled is final: nobody else writes link again
		if i := unlink(to); i >= 0 {
			t.markEmpty(i)
		}
	}
}

// markEmpty records that bucket i (of either level) holds nothing, so that plan skips it.
func (t *Timer) markEmpty(i int64) { t.occupied[i>>6] &^= 1 << (i & 63) }

// nextSet scans the occupancy bits of one level (base 0: the wheel, indexed by tick; base size: the far ring,
// indexed by rotation) and returns the first n >= from whose bucket (n mod size) is marked, or -1 if none is. It
// reads at most size/64 words.
func (t *Timer) nextSet(base, from int64) int64 {
	size := t.mask + 1
	start := from & t.mask
	for off := int64(0); off < size; {
		i := (start + off) & t.mask
		span := min(64-(i&63), size-i) // bits from i to the end of its word or of the level
		word := t.occupied[(base+i)>>6] >> ((base + i) & 63)
		if span < 64 {
			word &= 1<<span - 1
		}
		if word != 0 {
			return from + off + int64(bits.TrailingZeros64(word))
		}
		off += span
	}
	return -1
}

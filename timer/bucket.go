package timer

// bucket is one slot of the wheel or of the far ring (see wheel.go): a doubly linked ring of timeouts with a
// sentinel node, so that a timeout can be unlinked without knowing its bucket. Owned by the worker: no other
// goroutine reads or writes a bucket or the next/prev fields of a timeout.
//
// Remaining rounds: Netty stores each timeout's remaining rounds and decrements them on every visit. Here a
// timeout enters the wheel proper less than one rotation ahead, so it is due at its first visit; the far ring
// holds the rest, and a cascade compares each timeout's rotation (deadline / tick / size) with the current one,
// which is the remaining-rounds test derived from the deadline. That saves eight bytes per timeout.
type bucket struct {
	// ring is the sentinel: ring.next is the oldest timeout, ring.prev the newest. It is never scheduled; its
	// deadline field holds the bucket's index, so that unlink can report which bucket it emptied.
	ring Timeout
}

// init makes b the empty bucket of index i. Must be called before first use.
func (b *bucket) init(i int) {
	b.ring.next = &b.ring
	b.ring.prev = &b.ring
	b.ring.deadline = int64(i)
}

// empty reports whether b holds no timeout.
func (b *bucket) empty() bool { return b.ring.next == &b.ring }

// add appends t at the tail of b.
func (b *bucket) add(t *Timeout) {
	last := b.ring.prev
	t.prev = last
	t.next = &b.ring
	last.next = t
	b.ring.prev = t
}

// unlink removes t from whatever bucket it is in; a no-op if it is in none (so that a cancelled timeout can be
// unlinked by expiry and again by the cancel queue). It returns the index of the bucket if that is now empty, else -1.
func unlink(t *Timeout) int64 {
	if t.next == nil {
		return -1
	}
	prev := t.prev
	prev.next = t.next
	t.next.prev = prev
	t.next = nil
	t.prev = nil
	if prev.next == prev { // only an empty ring's sentinel points to itself
		return prev.deadline
	}
	return -1
}

// expire runs, in insertion order, every timeout of b whose deadline is before end (the end of the tick being
// processed), and unlinks those and the cancelled ones. The deadline test is the guarantee that nothing runs early;
// anything not yet due stays. Tasks may schedule and cancel timeouts while this runs: that only pushes onto the
// queues, never touches a bucket.
func (b *bucket) expire(w *Timer, end int64) {
	for t := b.ring.next; t != &b.ring; {
		next := t.next // saved before unlink clears it
		switch t.loadState() {
		case stateCancelled:
			unlink(t)
		case stateScheduled:
			if t.deadline < end {
				unlink(t)
				// The CAS is the point where expiry and Cancel race: whoever wins decides, exactly once.
				if t.casState(stateScheduled, stateExpired) {
					w.pending.Add(-1)
					w.runTask(t)
				}
			}
		}
		t = next
	}
}

// drain unlinks every timeout of b, appending those still scheduled to unrun after moving them to stateStopped.
// Used by the worker on its way out.
func (b *bucket) drain(w *Timer, unrun []*Timeout) []*Timeout {
	for t := b.ring.next; t != &b.ring; {
		next := t.next
		unlink(t)
		if t.casState(stateScheduled, stateStopped) {
			w.pending.Add(-1)
			unrun = append(unrun, t)
		}
		t = next
	}
	return unrun
}

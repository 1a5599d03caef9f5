package timer

import (
	"math/bits"
	"time"
)

// run is the worker: the one goroutine that owns the wheel and runs every task. Each tick it processes, it unlinks
// cancelled timeouts, places queued additions into buckets (both capped per tick), and expires the tick's bucket.
// Between ticks it sleeps until the end of the next tick whose bucket holds something — so an idle or sparse Timer
// costs no CPU however short its tick — unless additions are queued, which are placed at the end of the current
// tick; a NewTimeout wakes it if it sleeps past that. It exits when Stop closes t.stop, after collecting the
// timeouts that will never run.
func (t *Timer) run() {
	defer close(t.done)
	t.workerGID.Store(goroutineID())
	t.wheel = make([]bucket, t.mask+1)
	for i := range t.wheel {
		t.wheel[i].init(i)
	}
	t.occupied = make([]uint64, (len(t.wheel)+63)/64)

	// Ticks are numbered from the clock's origin: tick n spans [n*tick, (n+1)*tick). The worker processes tick n once
	// the clock has passed its end, so every deadline inside it has passed: nothing runs early.
	tick := t.clock.now() / t.tick
	for workerState(t.state.Load()) != workerShutdown {
		next, idle := t.plan(tick)
		now, ok, woken := t.waitForTickEnd(next, idle)
		if !ok {
			break
		}
		if woken {
			// A NewTimeout woke us before next: the ticks before the current one had empty buckets (next was the
			// first occupied one), so they need no processing. Place the new timeout at the end of this tick.
			tick = max(tick, now/t.tick)
			continue
		}
		tick = t.catchUp(next, now)
		t.processCancels(t.workPerTick)
		t.transfer(tick)
		b := &t.wheel[tick&t.mask]
		b.expire(t, (tick+1)*t.tick)
		if b.empty() {
			t.markEmpty(tick & t.mask)
		}
		t.ticks.Add(1)
		tick++
	}

	t.unrun = t.collectUnrun()
	t.clock.release()
}

// plan returns the next tick to process, starting from tick, and whether the worker may sleep past the end of
// tick (idle: a NewTimeout must then wake it). next is tick itself while additions or cancellations are queued or
// tick's bucket is occupied; otherwise the first occupied tick after it, or -1 if no bucket holds anything (the
// worker then sleeps until woken).
func (t *Timer) plan(tick int64) (next int64, idle bool) {
	if t.addBacklog != nil {
		return tick, false
	}
	// Unlink what was cancelled first: it frees the memory now, and buckets left empty need no wake-up.
	t.processCancels(t.workPerTick)
	if t.cancelBacklog != nil || !t.cancels.empty() {
		return tick, false
	}
	t.idle.Store(true)
	// Checked after idle is set, so that a NewTimeout racing with us either is seen here or sees idle.
	if !t.adds.empty() {
		t.idle.Store(false)
		return tick, false
	}
	next = t.nextOccupied(tick)
	if next == tick {
		t.idle.Store(false)
		return tick, false
	}
	return next, true
}

// waitForTickEnd waits until the clock has passed the end of tick (forever if tick is -1) and returns the time it
// read then. ok is false if Stop came first; woken is true if an idle wait was cut short by a NewTimeout.
func (t *Timer) waitForTickEnd(tick int64, idle bool) (now int64, ok, woken bool) {
	if idle {
		// However the wait ends, we are no longer idle; a NewTimeout that saw us idle meanwhile left a token, which
		// at worst cuts a later idle wait short for nothing.
		defer t.idle.Store(false)
	}
	if tick < 0 {
		select {
		case <-t.wake:
			return t.clock.now(), true, true
		case <-t.stop:
			return 0, false, false
		}
	}
	end := (tick + 1) * t.tick
	for {
		now = t.clock.now()
		if now >= end {
			return now, true, false
		}
		var wake chan struct{} // nil (never ready) unless idle
		if idle {
			wake = t.wake
		}
		select {
		case <-t.clock.sleepUntil(end):
		case <-wake:
			return t.clock.now(), true, true
		case <-t.stop:
			return now, false, false
		}
	}
}

// catchUp returns the tick to process given that the clock reads now, and reports lag to the observer. When the
// worker has fallen more than a whole rotation behind (the process was starved, or a task blocked), it skips ahead
// so that only the last WheelSize elapsed ticks are processed: each bucket is then visited exactly once, at a tick
// no earlier than any it skipped, so every overdue timeout still runs (late, never early) and the catch-up costs one
// rotation however long the stall was. Netty instead replays every missed tick.
func (t *Timer) catchUp(tick, now int64) int64 {
	lag := now - (tick+1)*t.tick
	switch {
	case lag > t.slowTask && !t.lagging:
		t.lagging = true
		if t.observer != nil {
			t.observer.TickLag(time.Duration(lag))
		}
	case lag < t.tick:
		t.lagging = false
	}
	last := now/t.tick - 1 // the latest tick that has fully elapsed
	if last-tick > t.mask {
		return last - t.mask
	}
	return tick
}

// transfer places up to workPerTick queued additions into their buckets, oldest first; the rest wait for the next
// tick. A timeout whose deadline tick has already been processed goes into the current tick's bucket, which is
// expired right after.
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
		i := max(to.deadline/t.tick, tick) & t.mask
		t.wheel[i].add(to)
		t.occupied[i>>6] |= 1 << (i & 63)
	}
}

// processCancels unlinks up to limit cancelled timeouts from their buckets, so their memory is released; the rest
// wait for the next tick (expiry also unlinks cancelled timeouts it meets).
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

// markEmpty records that bucket i holds nothing, so that idle waits skip its tick.
func (t *Timer) markEmpty(i int64) { t.occupied[i>>6] &^= 1 << (i & 63) }

// nextOccupied returns the first tick at or after from whose bucket is marked occupied, or -1 if none is. It scans
// the bitmap a word at a time: at most WheelSize/64 words.
func (t *Timer) nextOccupied(from int64) int64 {
	size := t.mask + 1
	start := from & t.mask
	for off := int64(0); off < size; {
		i := (start + off) & t.mask
		span := min(64-(i&63), size-i) // bits from i to the end of its word or of the wheel
		word := t.occupied[i>>6] >> (i & 63)
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

// runTask runs one expired task, timing it if someone is listening.
func (t *Timer) runTask(to *Timeout) {
	if t.observer == nil {
		to.task.Run(to)
		return
	}
	start := t.clock.now()
	to.task.Run(to)
	if took := t.clock.now() - start; took > t.slowTask {
		t.observer.SlowTask(to, time.Duration(took))
	}
}

// collectUnrun empties the wheel and the queues after Stop and returns the timeouts that were still pending, now in
// stateStopped. A NewTimeout pushing after this takes the queue sees workerShutdown and refuses its own timeout.
func (t *Timer) collectUnrun() []*Timeout {
	var unrun []*Timeout
	for i := range t.wheel {
		unrun = t.wheel[i].drain(t, unrun)
	}
	for _, l := range []*Timeout{t.addBacklog, reverse(t.adds.takeAll())} {
		for to := l; to != nil; {
			next := to.link
			to.link = nil
			if to.casState(stateInit, stateStopped) {
				t.pending.Add(-1)
				unrun = append(unrun, to)
			}
			to = next
		}
	}
	t.addBacklog = nil
	t.cancelBacklog = nil
	t.cancels.takeAll()
	return unrun
}

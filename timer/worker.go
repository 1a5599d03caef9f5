package timer

import (
	"math"
	"time"
)

// run is the worker: the one goroutine that owns the wheel and runs every task. For each tick it processes, it
// cascades the far ring into the wheel at the start of a rotation, unlinks cancelled timeouts, places queued
// additions (both capped per tick), and expires the tick's bucket. Between ticks it sleeps until the end of the next
// tick that has work — an occupied bucket or a cascade — so that an idle or sparse Timer costs no CPU however short
// its tick, unless additions or cancellations are queued, which it handles at the end of the current tick; a
// NewTimeout or Cancel wakes it if it sleeps past that. It exits when Stop closes t.stop, after collecting the
// timeouts that will never run.
func (t *Timer) run() {
	defer close(t.done)
	t.workerGID.Store(goroutineID())
	t.wheel = make([]bucket, 2*(t.mask+1)) // the wheel, then the far ring
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
			// A NewTimeout or Cancel woke us before next. The ticks before next had nothing to do in the wheel
			// (next was the first tick with work), so we may skip them — but not past the last tick that has
			// fully elapsed: what woke us may be a timeout whose deadline has passed by the time we run (we were
			// scheduled late, or the clock jumped), and it must run now, in that tick, not at the end of the
			// current one. Never skip next itself either: the wake-up may have raced with the end of its wait.
			cur := now/t.tick - 1
			if next >= 0 {
				cur = min(cur, next)
			}
			tick = max(tick, cur)
			continue
		}
		tick = t.catchUp(next, now)
		if tick&t.mask == 0 {
			t.cascade(tick>>t.shift, tick)
		}
		t.processCancels(t.workPerTick)
		t.transfer(tick)
		i := tick & t.mask
		if b := &t.wheel[i]; !b.empty() {
			b.expire(t, (tick+1)*t.tick)
			if b.empty() {
				t.markEmpty(i)
			}
		}
		t.ticks.Add(1)
		tick++
	}

	t.unrun = t.collectUnrun()
	t.clock.release()
}

// plan returns the next tick to process, starting from tick, and whether the worker may sleep past the end of
// tick (idle: a NewTimeout or Cancel must then wake it). next is tick itself while additions or cancellations are
// queued, or while tick has work; otherwise the first later tick with work (an occupied bucket, or the start of a
// rotation whose far bucket is occupied), or -1 if there is none (the worker then sleeps until woken).
func (t *Timer) plan(tick int64) (next int64, idle bool) {
	if t.addBacklog != nil {
		return tick, false
	}
	// Unlink what was cancelled first: it frees the memory now, and buckets left empty need no wake-up.
	t.processCancels(t.workPerTick)
	if t.cancelBacklog != nil {
		return tick, false
	}
	next = t.nextSet(0, tick)
	if r := t.nextSet(t.mask+1, (tick+t.mask)>>t.shift); r >= 0 && (next < 0 || r<<t.shift < next) {
		next = r << t.shift // the first rotation start at or after tick whose far bucket is occupied
	}
	if next == tick {
		return tick, false
	}
	// The plan first, then idle: a NewTimeout that sees idle also sees the plan it compares its deadline with.
	until := next
	if next < 0 {
		until = math.MaxInt64
	}
	t.idleUntil.Store(until)
	t.queued.Store(0)
	t.idle.Store(true)
	// Checked after idle is set, so that a NewTimeout or Cancel racing with us either is seen here or sees idle.
	if !t.adds.empty() || !t.cancels.empty() {
		t.idle.Store(false)
		return tick, false
	}
	return next, true
}

// wakeBacklog is how many additions (due after the idle worker's own wake-up) and cancellations may queue before
// they wake it: the queues' memory stays bounded however long the worker sleeps.
const wakeBacklog = 1024

// waitForTickEnd waits until the clock has passed the end of tick (forever if tick is -1) and returns the time it
// read then. ok is false if Stop came first; woken is true if an idle wait was cut short by a NewTimeout or Cancel.
func (t *Timer) waitForTickEnd(tick int64, idle bool) (now int64, ok, woken bool) {
	if idle {
		// However the wait ends, we are no longer idle; a caller that saw us idle meanwhile left a token, which at
		// worst cuts a later idle wait short for nothing.
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
	var wake chan struct{} // nil (never ready) unless idle
	if idle {
		wake = t.wake
	}
	for {
		now = t.clock.now()
		if now >= end {
			return now, true, false
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

// wakeIfIdle wakes the worker if it sleeps past the current tick, so that it handles what the caller just queued
// at the end of this tick. Only the first caller to see it idle sends a token, and never blocks.
func (t *Timer) wakeIfIdle() {
	if t.idle.Load() && t.idle.CompareAndSwap(true, false) {
		t.wakes.Add(1)
		select {
		case t.wake <- struct{}{}:
		default: // a token is already waiting
		}
	}
}

// catchUp returns the tick to process given that the clock reads now, and reports lag to the observer. When the
// worker has fallen more than a whole rotation behind (the process was starved, or a task blocked), it skips ahead
// so that only the last WheelSize elapsed ticks are processed: each bucket is then visited exactly once, at a tick
// no earlier than any it skipped, so every overdue timeout still runs (late, never early) and the catch-up costs one
// rotation however long the stall was. Netty instead replays every missed tick. The far buckets of the rotations
// whose start was skipped are cascaded first (at most one visit per far bucket).
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
	if last-tick <= t.mask {
		return tick
	}
	n := last - t.mask
	// Rotations starting in [tick, n) are skipped; n's own rotation start, if it is one, cascades as usual.
	lo, hi := (tick+t.mask)>>t.shift, (n-1)>>t.shift
	for r := max(lo, hi-t.mask); r <= hi; r++ {
		t.cascade(r, n)
	}
	return n
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

// collectUnrun empties the wheel, the far ring and the queues after Stop and returns the timeouts that were still
// pending, now in stateStopped. A NewTimeout pushing after this takes the queue sees workerShutdown and refuses its
// own timeout.
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

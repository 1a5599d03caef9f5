package timer

import "time"

// run is the worker: the one goroutine that owns the wheel and runs every task. Each tick it waits for the tick to
// end, unlinks cancelled timeouts, places queued additions into buckets (both capped per tick), and expires the
// tick's bucket. With nothing pending it parks until the next NewTimeout. It exits when Stop closes t.stop, after
// collecting the timeouts that will never run.
func (t *Timer) run() {
	defer close(t.done)
	t.workerGID.Store(goroutineID())
	t.wheel = make([]bucket, t.mask+1)
	for i := range t.wheel {
		t.wheel[i].init()
	}

	// Ticks are numbered from the clock's origin: tick n spans [n*tick, (n+1)*tick). The worker processes tick n once
	// the clock has passed its end, so every deadline inside it has passed: nothing runs early.
	tick := t.clock.now() / t.tick
	for workerState(t.state.Load()) != workerShutdown {
		now, ok := t.waitForTickEnd(tick)
		if !ok {
			break
		}
		tick = t.catchUp(tick, now)
		t.processCancels(t.workPerTick)
		t.transfer(tick)
		t.wheel[tick&t.mask].expire(t, (tick+1)*t.tick)
		t.ticks.Add(1)
		tick++
		if t.pending.Load() == 0 {
			if !t.park() {
				break
			}
			// Nothing was pending while parked, so the ticks slept through had nothing to expire.
			tick = max(tick, t.clock.now()/t.tick)
		}
	}

	t.unrun = t.collectUnrun()
	t.clock.release()
}

// waitForTickEnd waits until the clock has passed the end of tick and returns the time it read then; ok is false
// if Stop came first.
func (t *Timer) waitForTickEnd(tick int64) (now int64, ok bool) {
	end := (tick + 1) * t.tick
	for {
		now = t.clock.now()
		if now >= end {
			return now, true
		}
		select {
		case <-t.clock.sleep(end - now):
		case <-t.stop:
			return now, false
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
		target := max(to.deadline/t.tick, tick)
		t.wheel[target&t.mask].add(to)
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
		unlink(to)
	}
}

// park blocks the worker while nothing is pending, so that an idle Timer costs no CPU however short its tick. It
// returns false if Stop came first. A NewTimeout that finds parked set wakes it.
func (t *Timer) park() bool {
	t.parked.Store(true)
	// Checked after parked is set, so that a NewTimeout racing with us either is seen here or sees parked.
	if t.pending.Load() != 0 || !t.adds.empty() || t.addBacklog != nil {
		t.parked.Store(false)
		return true
	}
	// Release the memory of everything cancelled before sleeping: nothing else will visit the buckets.
	for t.cancelBacklog != nil || !t.cancels.empty() {
		t.processCancels(t.workPerTick)
	}
	select {
	case <-t.wake:
		t.parked.Store(false)
		return true
	case <-t.stop:
		return false
	}
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

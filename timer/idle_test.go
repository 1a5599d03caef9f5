package timer

import (
	"runtime"
	"testing"
	"time"
)

// awaitParked waits until the worker is idle (with nothing pending: parked until a NewTimeout). No event marks
// that, so this polls, with a bound.
func awaitParked(tb testing.TB, tm *Timer) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !tm.idle.Load() {
		if time.Now().After(deadline) {
			dumpGoroutines(tb)
			tb.Fatal("stall: the worker did not park with nothing pending")
		}
		runtime.Gosched()
	}
}

func TestIdleTimerParksAndWakesOnNewTimeout(t *testing.T) {
	c := newManualClock()
	tm := New(Config{Tick: testTick, clock: c})
	defer stopTimer(t, tm)
	first := newProbe(c, testTick)
	first.ran = make(chan struct{})
	if _, err := tm.NewTimeout(first, testTick); err != nil {
		t.Fatal(err)
	}
	c.awaitSleep(t)
	c.advance(2 * testTick) // runs first; then nothing is pending and the worker parks instead of sleeping
	awaitClosed(t, "first task", first.ran, 10*time.Second)
	awaitParked(t, tm)
	ticks := tm.ticks.Load()
	if c.advance(1000 * testTick) {
		t.Fatal("a parked worker was sleeping on the clock")
	}
	second := newProbe(c, 2*testTick)
	second.ran = make(chan struct{})
	c.schedule(t, tm, second, 2*testTick) // wakes the worker and waits until it sleeps on the clock again
	c.step(t, testTick)
	c.step(t, testTick) // at the deadline, inside its tick: not yet
	if second.runs.Load() != 0 {
		t.Fatal("second ran before the end of its deadline's tick")
	}
	c.advance(testTick) // the end of the deadline's tick: runs second, after which the worker parks again
	awaitClosed(t, "second task", second.ran, 10*time.Second)
	if second.ranAt.Load() < second.deadline {
		t.Fatalf("second ran at %d, before its deadline %d", second.ranAt.Load(), second.deadline)
	}
	awaitParked(t, tm)
	if n := tm.ticks.Load() - ticks; n > 3 {
		t.Fatalf("after parking the worker processed %d ticks; it should not replay the %d idle ones", n, 1000)
	}
}

func TestSparseTimerSleepsThroughEmptyTicks(t *testing.T) {
	tm, c := newManualTimer(t, Config{Tick: testTick, WheelSize: 64})
	defer stopTimer(t, tm)
	p := newProbe(c, 500*testTick) // seven rotations and a bit away
	c.schedule(t, tm, p, 500*testTick)
	c.step(t, testTick) // placed in its bucket
	ticks := tm.ticks.Load()
	for range 505 {
		c.step(t, testTick)
	}
	if p.runs.Load() != 1 || p.ranAt.Load() < p.deadline || p.ranAt.Load() > p.deadline+int64(testTick) {
		t.Fatalf("runs %d, ran at %d, deadline %d", p.runs.Load(), p.ranAt.Load(), p.deadline)
	}
	// The probe waits in the far ring: the worker wakes to cascade it, then when it is due. The sentinel, far
	// rounds away, costs at most one more wake-up. Never a wake-up per tick, nor one per rotation.
	if n := tm.ticks.Load() - ticks; n > 3 {
		t.Fatalf("the worker processed %d ticks over 505 mostly empty ones", n)
	}
}

func TestAWakeUpRacingWithTheEndOfAnIdleWaitSkipsNoTick(t *testing.T) {
	for range 100 {
		tm, c := newManualTimer(t, Config{Tick: testTick, WheelSize: 64})
		p := newProbe(c, 3*testTick)
		p.ran = make(chan struct{})
		c.schedule(t, tm, p, 3*testTick)
		// After placing p the worker reads the clock and goes to sleep, idle, until the end of p's tick. Between the
		// two, end p's tick and wake the worker with a NewTimeout: its wait then finds both its sleep over and a
		// wake-up token, and whichever it picks it must process p's tick, not skip to the current one.
		c.mu.Lock()
		c.beforeSleep = func() {
			c.advance(4 * testTick)
			if _, err := tm.NewTimeout(TaskFunc(func(*Timeout) {}), time.Hour); err != nil {
				t.Error(err)
			}
		}
		c.mu.Unlock()
		c.advance(testTick) // end tick 0: p is placed, then the hook runs
		awaitClosed(t, "the probe whose tick ended", p.ran, 5*time.Second)
		stopTimer(t, tm)
	}
}

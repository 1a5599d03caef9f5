package timer

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The worker sleeps through ticks with nothing to do and is woken by NewTimeout or Cancel when it sleeps past the
// current tick (idle). A wake-up it misses, or a sleep longer than the earliest deadline in the wheel or the far
// ring, would not show as an early run: the timeout would run late, at the next unrelated event — on a sparse
// Timer, never. These tests look for exactly that: a timeout whose tick has ended and that does not run while
// nothing else happens. (The chaos runs once saw a lock's local lease end delivered about 80 ms late on a loaded
// machine; these tests found no timer fault behind it: see rlock's hold.Err, which no longer relies on the timer.)

// missedProbe is a probe that signals its first run and remembers whether it was cancelled.
type missedProbe struct {
	*probe
	cancelled atomic.Bool
	to        *Timeout
}

// TestNoTimeoutIsMissedWhateverWhenItIsAdded drives the wheel with the manual clock in random steps — none, part
// of a tick, a tick, a few, a rotation, many rotations (a catch-up) — while timeouts are added at any moment: by
// the test goroutine while the worker processes a tick, and by the worker itself between planning its sleep and
// starting it (the window the idle flag closes), with delays that land in the current tick, the wheel, the far ring
// and later far rounds; and some are cancelled. After each step, with the clock frozen, every timeout whose
// deadline's tick has ended must run (the worker must not be asleep with it pending), and none may have run before
// its deadline. LOCKSMITH_TIMER_MISSED_SEEDS=<n> runs more seeds (default 12; 3 with -short).
func TestNoTimeoutIsMissedWhateverWhenItIsAdded(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	for seed := range uint64(envInt("LOCKSMITH_TIMER_MISSED_SEEDS", seeds)) {
		runMissedScenario(t, seed)
		if t.Failed() {
			return
		}
	}
}

func runMissedScenario(t *testing.T, seed uint64) {
	const wheel = 8
	const rotation = wheel * testTick
	tm, c := newManualTimer(t, Config{Tick: testTick, WheelSize: wheel})
	defer stopTimer(t, tm)
	rng := rand.New(rand.NewPCG(seed, 0x6d697373))
	delay := func() time.Duration {
		switch rng.IntN(7) {
		case 0:
			return 0
		case 1:
			return -time.Duration(rng.Int64N(int64(rotation)))
		case 2:
			return time.Duration(rng.Int64N(int64(testTick)))
		case 3:
			return time.Duration(rng.Int64N(int64(rotation)))
		case 4:
			return rotation + time.Duration(rng.Int64N(int64(3*rotation)))
		case 5:
			return wheel*rotation + time.Duration(rng.Int64N(int64(wheel*rotation))) // a later far round
		}
		return time.Duration(rng.Int64N(int64(2 * testTick)))
	}
	step := func() time.Duration {
		switch rng.IntN(10) {
		case 0:
			return 0
		case 1, 2, 3:
			return time.Duration(1 + rng.Int64N(int64(testTick)-1))
		case 4, 5, 6:
			return testTick
		case 7:
			return time.Duration(2+rng.IntN(4)) * testTick
		case 8:
			return rotation + time.Duration(rng.Int64N(int64(rotation)))
		}
		return time.Duration(2+rng.IntN(30)) * rotation // more than a rotation: a catch-up
	}

	var mu sync.Mutex // guards probes: the worker adds some from the hook
	var probes []*missedProbe
	// finished is set once the rounds are over: a hook the worker took just before it was cleared may still be
	// adding while the deferred Stop runs, and its ErrStopped is then the end of the scenario, not a fault.
	var finished atomic.Bool
	add := func(d time.Duration) {
		p := &missedProbe{probe: newProbe(c, d)}
		p.ran = make(chan struct{})
		to, err := tm.NewTimeout(p, d)
		if errors.Is(err, ErrStopped) && finished.Load() {
			return
		}
		if err != nil {
			t.Errorf("NewTimeout: %v", err)
			return
		}
		p.to = to
		// The deadline NewTimeout computed: the clock may move between newProbe and NewTimeout when the worker
		// adds from the hook while the test goroutine advances it.
		p.deadline = to.deadline
		mu.Lock()
		probes = append(probes, p)
		mu.Unlock()
	}

	for round := range 300 {
		for range rng.IntN(3) {
			add(delay()) // the worker may be anywhere: asleep, idle, or processing the last step's ticks
		}
		if rng.IntN(3) == 0 {
			d := delay()
			c.mu.Lock()
			if c.beforeSleep == nil {
				// Runs on the worker after it planned its next sleep and before it sleeps.
				c.beforeSleep = func() { add(d) }
			}
			c.mu.Unlock()
		}
		mu.Lock()
		if n := len(probes); n > 0 && rng.IntN(4) == 0 {
			p := probes[rng.IntN(n)]
			if p.to != nil && p.to.Cancel() {
				p.cancelled.Store(true)
			}
		}
		mu.Unlock()
		c.advance(step())

		// The clock stands still now: whatever is due must run without any further event.
		ended := c.now() / int64(testTick) * int64(testTick)
		mu.Lock()
		pending := append([]*missedProbe(nil), probes...)
		mu.Unlock()
		for i, p := range pending {
			if p.cancelled.Load() || p.deadline >= ended {
				continue
			}
			select {
			case <-p.ran:
			case <-time.After(5 * time.Second):
				c.mu.Lock()
				wakeAt := c.wakeAt
				c.mu.Unlock()
				t.Fatalf("seed %d round %d: probe %d (deadline %d, state %d) has not run with the clock at %d, past the end of "+
					"its tick: the worker slept through it (idle %v, sleeping until %d, adds queued %v)", seed, round, i, p.deadline,
					p.to.loadState(), c.now(), tm.idle.Load(), wakeAt, !tm.adds.empty())
			}
			if at := p.ranAt.Load(); at < p.deadline {
				t.Fatalf("seed %d: probe %d ran at %d, before its deadline %d", seed, i, at, p.deadline)
			}
		}
	}
	finished.Store(true)
	c.mu.Lock()
	c.beforeSleep = nil
	c.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	for i, p := range probes {
		if n := p.runs.Load(); n > 1 || (n == 1 && p.cancelled.Load()) {
			t.Fatalf("seed %d: probe %d ran %d times (cancelled: %v)", seed, i, n, p.cancelled.Load())
		}
	}
}

// TestSparseTimeoutsAreNotMissedOnTheRealClock is the same hunt on the monotonic clock, where the worker's sleep
// and a NewTimeout race for real: one timeout at a time (so that no other event can rescue one whose wake-up was
// lost), added at a varied moment — right after the previous task ran, while the worker plans its next sleep, or
// once it has gone idle — with delays inside the wheel and in the far ring. Each must run within 2 s of its
// deadline (a stall detector, not a latency assertion: on an idle Timer a missed wake-up means never), and never
// before it. Chains on several goroutines at once add the races between their NewTimeouts. The worst lateness is
// logged for information; BenchmarkTickCPU and the torture tests cover the rest.
func TestSparseTimeoutsAreNotMissedOnTheRealClock(t *testing.T) {
	n := 120
	if testing.Short() {
		n = 30
	}
	for _, chains := range []int{1, 4} {
		tm := New(Config{Tick: time.Millisecond, WheelSize: 16}) // a 16 ms rotation: longer delays use the far ring
		var wg sync.WaitGroup
		var worst atomic.Int64
		for g := range chains {
			wg.Add(1)
			go func() { // owned by this test; exits after its chain; awaited below
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 7))
				for i := range n {
					d := time.Duration(rng.Int64N(int64(40 * time.Millisecond)))
					ran := make(chan time.Duration, 1)
					start := time.Now()
					if _, err := tm.NewTimeout(TaskFunc(func(*Timeout) { ran <- time.Since(start) }), d); err != nil {
						t.Error(err)
						return
					}
					select {
					case took := <-ran:
						if took < d {
							t.Errorf("chains %d: timeout %d ran after %v, before its delay %v", chains, i, took, d)
						}
						for late := int64(took - d); ; {
							w := worst.Load()
							if late <= w || worst.CompareAndSwap(w, late) {
								break
							}
						}
					case <-time.After(d + 2*time.Second):
						t.Errorf("chains %d: timeout %d (delay %v) did not run within 2s of its deadline: missed", chains, i, d)
						return
					}
					// Vary the moment of the next NewTimeout relative to the worker's cycle. Not a wait for an
					// event: any moment is a valid one.
					switch rng.IntN(3) {
					case 0: // at once: the worker has just run the task and is planning its sleep
					case 1:
						time.Sleep(time.Duration(rng.Int64N(int64(3 * time.Millisecond)))) // asleep, idle
					default:
						for end := time.Now().Add(time.Duration(rng.Int64N(int64(200 * time.Microsecond)))); time.Now().Before(end); {
						}
					}
				}
			}()
		}
		wg.Wait()
		stopTimer(t, tm)
		t.Logf("%d chain(s) of %d sparse timeouts: worst lateness %v", chains, n, time.Duration(worst.Load()))
		if t.Failed() {
			return
		}
	}
}

// TestATimeoutDueByTheTimeItsWakeUpIsHandledRunsAtOnce: a NewTimeout wakes an idle worker, but the worker runs
// only after the timeout's tick has ended (it was scheduled late: a loaded machine). The worker must not skip to
// the current tick and place the timeout there, which would run it up to a tick later than its deadline's tick, at
// the end of the current one: it runs at once. The hook makes the interleaving exact: on the worker, after it has
// planned an idle sleep, the timeout is added (leaving a wake-up token) and the clock then moves 1.5 ticks on
// before the worker reads it. Found by TestNoTimeoutIsMissedWhateverWhenItIsAdded.
func TestATimeoutDueByTheTimeItsWakeUpIsHandledRunsAtOnce(t *testing.T) {
	tm, c := newManualTimer(t, Config{Tick: testTick, WheelSize: 64})
	defer stopTimer(t, tm)
	far := c.schedule(t, tm, TaskFunc(func(*Timeout) {}), time.Hour)
	c.step(t, testTick) // placed; the worker goes idle
	p := newProbe(c, 0)
	p.ran = make(chan struct{})
	c.mu.Lock()
	c.beforeSleep = func() {
		p.deadline = c.now()
		if _, err := tm.NewTimeout(p, 0); err != nil {
			t.Error(err)
		}
		c.advance(testTick + testTick/2)
	}
	c.mu.Unlock()
	far.Cancel()
	tm.wakeIfIdle() // wakes the idle worker, which plans another idle sleep: the hook runs then
	select {
	case <-p.ran:
	case <-time.After(5 * time.Second):
		t.Fatalf("the timeout (deadline %d) has not run with the clock at %d, past the end of its tick", p.deadline, c.now())
	}
	if p.ranAt.Load() < p.deadline {
		t.Fatalf("ran at %d, before its deadline %d", p.ranAt.Load(), p.deadline)
	}
}

package timer

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// envInt returns the integer in the environment variable name, or def if it is unset or malformed. Used to scale the
// long tests up (full watchdog run) or down.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// fullRuns reports whether LOCKSMITH_TIMER_FULL=1 asks for the full-size stress tests.
func fullRuns() bool { return os.Getenv("LOCKSMITH_TIMER_FULL") == "1" }

// dumpGoroutines logs the stacks of every goroutine: what a stall detector leaves behind for diagnosis.
func dumpGoroutines(tb testing.TB) {
	tb.Helper()
	buf := make([]byte, 8<<20)
	tb.Logf("goroutine dump:\n%s", buf[:runtime.Stack(buf, true)])
}

// awaitProgress waits until done is closed. It is the tests' stall detector: if progress() keeps the same value for
// quiet, it dumps every goroutine and fails the test instead of hanging. Call it from the test goroutine.
func awaitProgress(tb testing.TB, what string, done <-chan struct{}, progress func() int64, quiet time.Duration) {
	tb.Helper()
	check := time.NewTicker(quiet / 10)
	defer check.Stop()
	last, since := progress(), time.Now()
	for {
		select {
		case <-done:
			return
		case <-check.C:
			if p := progress(); p != last {
				last, since = p, time.Now()
			} else if time.Since(since) >= quiet {
				dumpGoroutines(tb)
				tb.Fatalf("stall: %s made no progress for %v (progress counter stuck at %d)", what, quiet, p)
			}
		}
	}
}

// awaitClosed waits for done with a fixed bound, dumping goroutines and failing if it passes: for waits with no
// progress counter (a Stop that must return).
func awaitClosed(tb testing.TB, what string, done <-chan struct{}, bound time.Duration) {
	tb.Helper()
	awaitProgress(tb, what, done, func() int64 { return 0 }, bound)
}

// manualClock is a clock the test moves by hand. It also tells the test each time the worker goes to sleep, which
// is how a test knows the worker has finished a tick: lock-step without sleeping.
type manualClock struct {
	mu       sync.Mutex
	t        int64          // guarded by mu
	wakeAt   int64          // guarded by mu; -1 when the worker is not sleeping
	fire     chan time.Time // buffered (1): the worker's wake-up
	sleeping chan struct{}  // buffered (1): a token each time the worker starts to sleep

	// beforeSleep, if set, is called (once, then cleared) on the worker when it next calls sleepUntil, before the
	// clock looks at the time: a test hook to make things happen between the worker's reading of the clock and its
	// wait. Guarded by mu; called without it.
	beforeSleep func()
}

func newManualClock() *manualClock {
	return &manualClock{wakeAt: -1, fire: make(chan time.Time, 1), sleeping: make(chan struct{}, 1)}
}

func (c *manualClock) now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) sleepUntil(end int64) <-chan time.Time {
	c.mu.Lock()
	if hook := c.beforeSleep; hook != nil {
		c.beforeSleep = nil
		c.mu.Unlock()
		hook()
		c.mu.Lock()
	}
	defer c.mu.Unlock()
	select {
	case <-c.fire: // abandon an earlier wake-up
	default:
	}
	if end <= c.t { // the clock moved on since the worker read it: no sleep
		c.wakeAt = -1
		c.fire <- time.Time{}
		return c.fire
	}
	c.wakeAt = end
	select {
	case c.sleeping <- struct{}{}:
	default:
	}
	return c.fire
}

func (c *manualClock) release() {}

// advance moves the clock by d and reports whether that woke the worker.
func (c *manualClock) advance(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t += int64(d)
	if c.wakeAt < 0 || c.t < c.wakeAt {
		return false
	}
	c.wakeAt = -1
	select {
	case <-c.sleeping: // the token of the sleep being ended: the caller waits for the next one
	default:
	}
	c.fire <- time.Time{}
	return true
}

// awaitSleep waits until the worker has gone to sleep again (it has finished every tick the clock allows).
func (c *manualClock) awaitSleep(tb testing.TB) {
	tb.Helper()
	select {
	case <-c.sleeping:
	case <-time.After(10 * time.Second):
		dumpGoroutines(tb)
		tb.Fatal("stall: the worker did not go back to sleep within 10s")
	}
}

// step advances the clock by d and, if that woke the worker, waits until it sleeps again.
func (c *manualClock) step(tb testing.TB, d time.Duration) {
	tb.Helper()
	if c.advance(d) {
		c.awaitSleep(tb)
	}
}

// schedule calls tm.NewTimeout and, if that woke an idle worker (sleeping past the current tick), waits until it
// sleeps again, to keep the test in lock-step with the worker. Call it only while the worker sleeps.
func (c *manualClock) schedule(tb testing.TB, tm *Timer, task Task, d time.Duration) *Timeout {
	tb.Helper()
	woke := tm.wakes.Load()
	to, err := tm.NewTimeout(task, d)
	if err != nil {
		tb.Fatalf("NewTimeout: %v", err)
	}
	if tm.wakes.Load() != woke {
		c.awaitSleep(tb)
	}
	return to
}

// cancel calls to.Cancel and, if that woke an idle worker, waits until it sleeps again (see schedule).
func (c *manualClock) cancel(tb testing.TB, tm *Timer, to *Timeout) bool {
	tb.Helper()
	woke := tm.wakes.Load()
	ok := to.Cancel()
	if tm.wakes.Load() != woke {
		c.awaitSleep(tb)
	}
	return ok
}

// stopTimer stops tm at the end of a test, failing if Stop does not return.
func stopTimer(tb testing.TB, tm *Timer) []*Timeout {
	tb.Helper()
	var unrun []*Timeout
	var err error
	done := make(chan struct{})
	go func() { // owned by this helper; exits when Stop returns; awaited below
		defer close(done)
		unrun, err = tm.Stop()
	}()
	awaitClosed(tb, "Stop", done, 20*time.Second)
	if err != nil {
		tb.Fatalf("Stop: %v", err)
	}
	return unrun
}

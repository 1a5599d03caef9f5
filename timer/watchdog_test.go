package timer

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// The watchdog pattern: many lock entries, each re-arming its own renewal from inside its task, as rlock's watchdog
// does. Default: 20,000 chains for 10 s (5,000 for 3 s with -short); LOCKSMITH_TIMER_FULL=1 runs the size the wheel is
// required to carry, 100,000 chains re-arming every 300 ms for 30 s.

// watchdogChain is one lock entry: its own Task, re-armed on the worker.
type watchdogChain struct {
	w     *watchdogRun
	wait  time.Duration // the delay of the current arm
	armed time.Time     // when the current arm was made
	runs  int64         // worker only (until Stop returns)
	// How the chain ended, set on the worker: it saw stopping and did not re-arm, or its re-arm raced with Stop.
	quit, refused bool
}

// watchdogRun is the state the chains share; the fields below w.progress are touched on the worker only.
type watchdogRun struct {
	tm       *Timer
	period   time.Duration
	stopping atomic.Bool
	progress atomic.Int64
	late     *latencyHist // microseconds
	early    int64
	errs     int64
}

func (c *watchdogChain) Run(*Timeout) {
	w := c.w
	late := time.Since(c.armed) - c.wait
	if late < 0 {
		w.early++
	}
	w.late.RecordValue(max(late.Microseconds(), 0))
	c.runs++
	w.progress.Add(1)
	if w.stopping.Load() {
		c.quit = true
		return
	}
	c.wait, c.armed = w.period, time.Now()
	if _, err := w.tm.NewTimeout(c, w.period); errors.Is(err, ErrStopped) {
		c.refused = true
	} else if err != nil {
		w.errs++
	}
}

func TestWatchdogPatternKeepsEveryChainAlive(t *testing.T) {
	chains, dur := 20_000, 10*time.Second
	switch {
	case fullRuns():
		chains, dur = 100_000, 30*time.Second
	case testing.Short():
		chains, dur = 5_000, 3*time.Second
	}
	const period = 300 * time.Millisecond
	w := &watchdogRun{tm: New(Config{}), period: period, late: newLatencyHist()}
	cs := make([]*watchdogChain, chains)
	for i := range cs {
		// Spread the first renewals over one period, as locks acquired at different times are.
		c := &watchdogChain{w: w, wait: period * time.Duration(i) / time.Duration(chains), armed: time.Now()}
		cs[i] = c
		if _, err := w.tm.NewTimeout(c, c.wait); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	awaitProgress(t, "watchdog chains", ctx.Done(), w.progress.Load, 5*time.Second)

	w.stopping.Store(true)
	unrun := stopTimer(t, w.tm)
	pendingAtStop := map[*watchdogChain]int{}
	for _, to := range unrun {
		pendingAtStop[to.Task().(*watchdogChain)]++
	}
	var dead, minRuns, maxRuns, total int64 = 0, 1 << 62, 0, 0
	for _, c := range cs {
		ends := pendingAtStop[c]
		if c.quit {
			ends++
		}
		if c.refused {
			ends++
		}
		if ends != 1 || c.runs == 0 {
			dead++
		}
		minRuns, maxRuns, total = min(minRuns, c.runs), max(maxRuns, c.runs), total+c.runs
	}
	h := w.late
	t.Logf("watchdog: %d chains re-arming every %v for %v: %d runs (%.0f/s), runs per chain %d..%d; "+
		"lateness p50 %v p99 %v p999 %v max %v",
		chains, period, dur, total, float64(total)/dur.Seconds(), minRuns, maxRuns,
		us(h.ValueAtQuantile(50)), us(h.ValueAtQuantile(99)), us(h.ValueAtQuantile(99.9)), us(h.Max()))
	if dead != 0 || w.early != 0 || w.errs != 0 {
		t.Fatalf("%d chains died (no pending renewal at Stop, or never ran), %d runs early, %d NewTimeout errors",
			dead, w.early, w.errs)
	}
}

func us(v int64) time.Duration { return time.Duration(v) * time.Microsecond }

package timer

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// groupRuns records the calls of a Group task: how many, and with which closed flag.
type groupRuns struct {
	normal, closed atomic.Int32
}

func (r *groupRuns) fn(closed bool) {
	if closed {
		r.closed.Add(1)
	} else {
		r.normal.Add(1)
	}
}

func (r *groupRuns) want(tb testing.TB, what string, normal, closed int32) {
	tb.Helper()
	if n, c := r.normal.Load(), r.closed.Load(); n != normal || c != closed {
		tb.Fatalf("%s: ran %d times with closed=false and %d with closed=true; want %d and %d", what, n, c, normal,
			closed)
	}
}

// after calls g.After on a Timer of a manual clock and, if that woke the worker, waits until it sleeps again (see
// manualClock.schedule).
func after(tb testing.TB, c *manualClock, tm *Timer, g *Group, d time.Duration, fn func(bool)) {
	tb.Helper()
	woke := tm.wakes.Load()
	if err := g.After(d, fn); err != nil {
		tb.Fatalf("After: %v", err)
	}
	if tm.wakes.Load() != woke {
		c.awaitSleep(tb)
	}
}

func TestGroupTaskRunsOnceWhenItsDelayEnds(t *testing.T) {
	tm, c := newManualTimer(t, Config{Tick: testTick, WheelSize: 8})
	defer stopTimer(t, tm)
	g := NewGroup(tm)
	var r groupRuns
	after(t, c, tm, g, 3*testTick, r.fn)
	c.step(t, 2*testTick)
	r.want(t, "before its delay", 0, 0)
	c.step(t, 2*testTick)
	r.want(t, "after its delay", 1, 0)
	g.Close()
	r.want(t, "after Close", 1, 0)
}

func TestGroupCloseRunsWaitingTasksWithClosedAndRefusesLaterOnes(t *testing.T) {
	tm, c := newManualTimer(t, Config{Tick: testTick, WheelSize: 8})
	defer stopTimer(t, tm)
	g := NewGroup(tm)
	var r groupRuns
	for range 3 {
		after(t, c, tm, g, time.Hour, r.fn)
	}
	g.Close()
	r.want(t, "Close", 0, 3)
	if err := g.After(testTick, r.fn); !errors.Is(err, ErrGroupClosed) {
		t.Fatalf("After after Close = %v, want ErrGroupClosed", err)
	}
	c.step(t, 2*testTick)
	g.Close()
	r.want(t, "a second Close and a tick later", 0, 3)
	if n := tm.Pending(); n != 1 { // the sentinel of newManualTimer only: Close cancelled the timeouts
		t.Errorf("pending timeouts after Close = %d, want 1", n)
	}
}

func TestGroupRunNowRunsWaitingTasksEarlyAndOnlyOnce(t *testing.T) {
	tm, c := newManualTimer(t, Config{Tick: testTick, WheelSize: 8})
	defer stopTimer(t, tm)
	g := NewGroup(tm)
	var r groupRuns
	for range 2 {
		after(t, c, tm, g, 3*testTick, r.fn)
	}
	c.step(t, testTick)
	g.RunNow()
	r.want(t, "RunNow", 2, 0)
	c.step(t, 5*testTick)
	g.Close()
	r.want(t, "their delay and Close after RunNow", 2, 0)
}

func TestGroupAfterReportsTheTimersRefusal(t *testing.T) {
	tm := New(Config{})
	if _, err := tm.Stop(); err != nil {
		t.Fatal(err)
	}
	g := NewGroup(tm)
	var r groupRuns
	if err := g.After(time.Millisecond, r.fn); !errors.Is(err, ErrStopped) {
		t.Fatalf("After on a stopped Timer = %v, want ErrStopped", err)
	}
	g.Close()
	r.want(t, "a refused task", 0, 0)
}

// Expiry on the worker, RunNow and Close race for the same tasks: each must run exactly once.
func TestGroupRunsEveryTaskExactlyOnceWhenExpiryRunNowAndCloseRace(t *testing.T) {
	tm := New(Config{Tick: time.Millisecond})
	g := NewGroup(tm)
	const n = 2000
	runs := make([]atomic.Int32, n)
	var scheduled sync.WaitGroup
	for w := range 4 {
		scheduled.Add(1)
		go func() { // owned by this test; exits when its share is scheduled; awaited below
			defer scheduled.Done()
			for i := w; i < n; i += 4 {
				err := g.After(time.Duration(i%3)*time.Millisecond, func(bool) { runs[i].Add(1) })
				if errors.Is(err, ErrGroupClosed) {
					runs[i].Add(1) // refused: the caller settles it, which counts as its one run
				} else if err != nil {
					t.Errorf("After: %v", err)
				}
				if i%97 == 0 {
					g.RunNow()
				}
			}
		}()
	}
	g.RunNow()
	g.Close()
	scheduled.Wait()
	stopTimer(t, tm) // waits for the worker, so every task it started has finished
	for i := range runs {
		if got := runs[i].Load(); got != 1 {
			t.Fatalf("task %d ran %d times, want exactly once", i, got)
		}
	}
}

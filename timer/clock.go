package timer

import "time"

// clock is the worker's source of time. The Timer uses nothing else, so tests can drive the wheel with a manual
// clock and check that no task ever runs before its deadline.
type clock interface {
	// now returns the nanoseconds elapsed since the clock was made. Monotonic, never negative. Safe for concurrent
	// use (NewTimeout calls it on every goroutine).
	now() int64

	// sleepUntil returns a channel that receives once now() has reached end (at once if it has already). Worker
	// only; a second call abandons the first one.
	sleepUntil(end int64) <-chan time.Time

	// release frees what sleep holds. Worker only, on its way out.
	release()
}

// monoClock is the process's monotonic clock, read as time.Since of the instant the Timer was created: wall-clock
// jumps (NTP steps, a changed date) move neither deadlines nor ticks, unlike wheels built on time.Now().UnixMilli.
type monoClock struct {
	origin time.Time   // immutable; carries a monotonic reading
	timer  *time.Timer // owned by the worker; reused for every sleep
}

func newMonoClock() *monoClock { return &monoClock{origin: time.Now()} }

func (c *monoClock) now() int64 { return int64(time.Since(c.origin)) }

func (c *monoClock) sleepUntil(end int64) <-chan time.Time {
	d := max(end-c.now(), 1)
	if c.timer == nil {
		c.timer = time.NewTimer(time.Duration(d))
	} else {
		// Since Go 1.23 Reset also discards a value left in the channel, so no stale wake-up can follow.
		c.timer.Reset(time.Duration(d))
	}
	return c.timer.C
}

func (c *monoClock) release() {
	if c.timer != nil {
		c.timer.Stop()
	}
}

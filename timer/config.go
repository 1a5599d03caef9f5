package timer

import "time"

// Defaults applied by New to zero or out-of-range Config fields.
const (
	// DefaultTick is the default tick: 10 ms. Lock renewals (every 10 s with Redisson's 30 s watchdog lease) would be
	// content with 100 ms (Netty's default), but the same Timer carries response timeouts (3 s by default) and waits
	// bounded by a lock's TTL, where a tenth of a second of lateness is visible. A short tick costs nothing while
	// timeouts are sparse, because the worker sleeps through ticks whose bucket is empty (BenchmarkTickCPU: one
	// pending timeout costs about 0.02% of a core at 1 ms and 10 ms ticks alike; waking every 10 ms regardless, as
	// Netty does, cost 1.3% here, and every 1 ms 4.9%). When every bucket holds timeouts the worker wakes every tick,
	// which is then work it has to do anyway.
	DefaultTick = 10 * time.Millisecond

	// MinTick is the smallest tick New accepts; shorter ticks are raised to it. Below a millisecond the worker's
	// wake-ups cost more than the accuracy is worth, and the runtime's own timers are the better tool.
	MinTick = time.Millisecond

	// DefaultWheelSize is the default number of buckets: 1024, so that one rotation at DefaultTick (10.24 s) covers
	// both a watchdog renewal interval (10 s) and a response timeout (3 s): those go straight into the bucket they
	// are due in, and only longer delays take the detour through the far ring. The wheel and the far ring cost 64
	// bytes per bucket each (128 KiB at the default).
	DefaultWheelSize = 1024

	// MaxWheelSize is the largest wheel New builds (8 MiB of buckets); larger sizes are lowered to it.
	MaxWheelSize = 1 << 16

	// DefaultSlowTask is the default threshold above which a task's run time (or the worker's lag behind the clock)
	// is reported to the Observer: one default tick, since a task that runs longer makes every other task late.
	DefaultSlowTask = 10 * time.Millisecond

	// defaultWorkPerTick caps how many queued additions, and separately how many queued cancellations, the worker
	// takes per tick (Netty's 100,000), so that a flood of NewTimeout calls cannot keep it from expiring due
	// timeouts. What is left stays queued, in order, for the next tick.
	defaultWorkPerTick = 100_000
)

// Config configures a Timer. The zero Config is valid: every zero field takes its default.
type Config struct {
	// Tick is the duration of one tick: the worker's resolution. A timeout runs at the end of the tick its deadline
	// falls in, so up to one Tick late, never early. Default DefaultTick (10 ms); raised to MinTick (1 ms).
	Tick time.Duration

	// WheelSize is the number of buckets. It is rounded up to a power of two. Default DefaultWheelSize (1024); at
	// most MaxWheelSize. Timeouts further away than Tick*WheelSize wait in the far ring until their rotation.
	WheelSize int

	// MaxPending caps the number of pending timeouts (scheduled, not yet run, cancelled or stopped). When the cap is
	// reached NewTimeout returns a *PendingLimitError (errors.Is ErrTooManyPending). 0 or negative: no cap.
	MaxPending int64

	// SlowTask is the threshold above which a task's run time, or the worker's lag behind the clock at the start of
	// a tick, is reported to Observer. Default DefaultSlowTask (10 ms). Ignored without an Observer.
	SlowTask time.Duration

	// Observer receives slow-task and tick-lag reports, on the worker. Optional: nil reports nothing (and the worker
	// then does not time its tasks).
	Observer Observer

	// clock replaces the monotonic clock: tests inject a manual one. nil: the process's monotonic clock.
	clock clock

	// workPerTick replaces defaultWorkPerTick: tests lower it to exercise the cap. 0: the default.
	workPerTick int
}

// normalized returns c with every default applied and every out-of-range field brought into range.
func (c Config) normalized() Config {
	if c.Tick <= 0 {
		c.Tick = DefaultTick
	}
	if c.Tick < MinTick {
		c.Tick = MinTick
	}
	switch {
	case c.WheelSize <= 0:
		c.WheelSize = DefaultWheelSize
	case c.WheelSize > MaxWheelSize:
		c.WheelSize = MaxWheelSize
	}
	n := 1
	for n < c.WheelSize {
		n <<= 1
	}
	c.WheelSize = n
	if c.MaxPending < 0 {
		c.MaxPending = 0
	}
	if c.SlowTask <= 0 {
		c.SlowTask = DefaultSlowTask
	}
	if c.clock == nil {
		c.clock = newMonoClock()
	}
	if c.workPerTick <= 0 {
		c.workPerTick = defaultWorkPerTick
	}
	return c
}

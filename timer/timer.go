package timer

import (
	"math"
	"math/bits"
	"runtime"
	"sync/atomic"
	"time"
)

// workerState is the life cycle of a Timer's worker. Legal transitions:
//
//	workerInit    -> workerStarted   the first NewTimeout, which starts the worker goroutine
//	workerInit    -> workerShutdown  Stop before any timeout was scheduled (no goroutine was ever started)
//	workerStarted -> workerShutdown  Stop, which then waits for the worker to exit
type workerState int32

const (
	workerInit workerState = iota
	workerStarted
	workerShutdown
)

// Timer is a hashed timing wheel in the shape of Netty's HashedWheelTimer: one worker goroutine owns a wheel of
// buckets and runs every task. Create it with New; the zero Timer is not usable. All methods are safe for
// concurrent use. See the package documentation for accuracy and sharing.
type Timer struct {
	// Immutable after New.
	tick        int64 // nanoseconds
	mask        int64 // wheel size - 1
	shift       uint  // log2(wheel size)
	maxPending  int64 // 0: no cap
	slowTask    int64 // nanoseconds
	observer    Observer
	clock       clock
	workPerTick int

	state atomic.Int32 // a workerState; read-mostly
	idle  atomic.Bool  // set by the worker before it sleeps past the current tick; cleared by whoever wakes it
	// idleUntil is the tick an idle worker wakes for by itself (math.MaxInt64: none), written before idle is set:
	// a timeout due before it must wake the worker; a later one can wait to be placed until then.
	idleUntil atomic.Int64

	// The three fields every NewTimeout or Cancel writes each get a cache line of their own, so that callers on
	// different cores and the worker do not also invalidate each other's copies of the read-mostly fields.
	_       [64]byte
	pending atomic.Int64 // timeouts scheduled and not yet run, cancelled or stopped
	queued  atomic.Int64 // additions and cancellations queued since the worker last went idle, counted while it is
	_       [48]byte
	adds    timeoutStack // new timeouts, pushed by NewTimeout, taken by the worker
	_       [56]byte
	cancels timeoutStack // cancelled timeouts still in a bucket, pushed by Cancel, taken by the worker
	_       [56]byte

	wake chan struct{} // buffered (1): a NewTimeout or Cancel that finds the worker idle leaves a token
	stop chan struct{} // closed by the Stop that moves the state to workerShutdown while the worker runs
	done chan struct{} // closed when the worker has exited, or by Stop if the worker never started

	workerGID atomic.Uint64 // goroutine id of the worker, to refuse Stop from a task
	ticks     atomic.Int64  // ticks processed; read by tests to check that catch-up is bounded
	wakes     atomic.Int64  // idle waits cut short by NewTimeout or Cancel; read by tests

	// Owned by the worker.
	wheel         []bucket // the wheel, then the far ring (see wheel.go)
	occupied      []uint64 // bit i: bucket i may hold timeouts (cleared when seen empty); lets plan skip ticks
	addBacklog    *Timeout // additions taken from adds but not yet placed (over the per-tick cap), oldest first
	cancelBacklog *Timeout // cancellations taken from cancels but not yet unlinked (over the per-tick cap)
	lagging       bool     // a TickLag report was made and the worker has not caught up since

	unrun []*Timeout // written by the worker before it closes done; read by the Stop that stopped it
}

// New returns a Timer configured by cfg (see Config for defaults). It starts no goroutine: the worker starts with the
// first NewTimeout, as Netty's does, so an unused Timer costs nothing. Stop it when done with it, or its worker
// goroutine stays. Never blocks.
func New(cfg Config) *Timer {
	cfg = cfg.normalized()
	return &Timer{
		tick:        int64(cfg.Tick),
		mask:        int64(cfg.WheelSize - 1),
		shift:       uint(bits.TrailingZeros(uint(cfg.WheelSize))),
		maxPending:  cfg.MaxPending,
		slowTask:    int64(cfg.SlowTask),
		observer:    cfg.Observer,
		clock:       cfg.clock,
		workPerTick: cfg.workPerTick,
		wake:        make(chan struct{}, 1),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
	}
}

// NewTimeout schedules task to run once on the worker after delay. A delay of zero or less runs it on the next
// tick. The task never runs before delay has elapsed (by the monotonic clock) and, unless the process is starved or
// another task blocks the worker, at most about one tick later.
//
// NewTimeout never blocks and never waits for the worker: it allocates the Timeout and pushes it onto a lock-free
// queue that the worker drains at its next tick. It is safe for concurrent use, also from a task (the re-arm
// pattern: a task scheduling its own next run).
//
// Errors: ErrNilTask; ErrStopped once Stop has been called (a NewTimeout racing with Stop either fails with
// ErrStopped, or succeeds and its Timeout is among those Stop returns); a *PendingLimitError (errors.Is
// ErrTooManyPending) when Config.MaxPending timeouts are pending.
func (t *Timer) NewTimeout(task Task, delay time.Duration) (*Timeout, error) {
	if task == nil {
		return nil, ErrNilTask
	}
	if err := t.start(); err != nil {
		return nil, err
	}
	if n := t.pending.Add(1); t.maxPending > 0 && n > t.maxPending {
		t.pending.Add(-1)
		return nil, &PendingLimitError{Limit: t.maxPending}
	}
	now := t.clock.now()
	deadline := now + int64(max(delay, 0))
	if delay > 0 && deadline < now { // overflow: a delay of centuries never falls due
		deadline = math.MaxInt64
	}
	to := &Timeout{task: task, timer: t, deadline: deadline}
	t.adds.push(to)
	// An idle worker sleeps past the current tick: it must place this timeout first when it falls due before the
	// worker wakes by itself. It stores idleUntil and then idle before its last look at the queue, and these loads
	// follow our push, so either it sees the new timeout or we see it idle with its plan: no wake-up is lost. A
	// timeout due later waits in the queue (unless the queue grows long: see wakeBacklog), which spares a busy
	// client a wake-up of the worker per timeout.
	if t.idle.Load() && (deadline/t.tick < t.idleUntil.Load() || t.queued.Add(1) > wakeBacklog) {
		t.wakeIfIdle()
	}
	// Stop may have come between start and push, and the exiting worker may have taken the queue before our push.
	// Whoever moves the timeout out of stateInit decides: we (it is refused) or the worker (Stop returns it).
	if workerState(t.state.Load()) == workerShutdown && to.casState(stateInit, stateCancelled) {
		t.pending.Add(-1)
		return nil, ErrStopped
	}
	return to, nil
}

// start starts the worker if it is not running yet, or reports ErrStopped.
func (t *Timer) start() error {
	for {
		switch workerState(t.state.Load()) {
		case workerStarted:
			return nil
		case workerShutdown:
			return ErrStopped
		default:
			if t.state.CompareAndSwap(int32(workerInit), int32(workerStarted)) {
				go t.run() // owned by the Timer; exits when Stop closes t.stop; Stop waits for t.done
				return nil
			}
		}
	}
}

// Stop stops the worker and returns the timeouts that were pending and will now never run, in no particular order
// (Cancel on them reports true). It blocks until the worker has exited, which is at most the run time of the task
// the worker is running (tasks must not block). After Stop, NewTimeout returns ErrStopped. Safe for concurrent
// use: every call waits for the worker; only the first returns the timeouts, later ones return nil, nil.
//
// Called from a task on the worker, Stop would wait for itself: it returns ErrStopFromTask and stops nothing.
func (t *Timer) Stop() ([]*Timeout, error) {
	if id := t.workerGID.Load(); id != 0 && id == goroutineID() {
		return nil, ErrStopFromTask
	}
	for {
		switch workerState(t.state.Load()) {
		case workerInit:
			if t.state.CompareAndSwap(int32(workerInit), int32(workerShutdown)) {
				close(t.done)
				return nil, nil
			}
		case workerStarted:
			if t.state.CompareAndSwap(int32(workerStarted), int32(workerShutdown)) {
				close(t.stop)
				<-t.done
				unrun := t.unrun
				t.unrun = nil
				return unrun, nil
			}
		default:
			<-t.done
			return nil, nil
		}
	}
}

// Pending returns the number of timeouts scheduled and not yet run, cancelled or stopped. Safe for concurrent use;
// never blocks.
func (t *Timer) Pending() int64 { return t.pending.Load() }

// goroutineID returns the id of the calling goroutine, read from the header of its stack trace ("goroutine 42
// [running]:"), or 0 if that cannot be parsed. Used only by Stop (and once by the worker), never on a hot path:
// Go does not expose goroutine ids, and this is the one place where identity is needed, to refuse a
// self-deadlocking Stop.
func goroutineID() uint64 {
	var buf [40]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return 0
	}
	var id uint64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

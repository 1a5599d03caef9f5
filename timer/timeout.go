package timer

import "sync/atomic"

// Task is the work a Timeout runs when it expires. Run is called on the Timer's single worker goroutine with the
// Timeout that fired, so it must not block: it should take microseconds and hand anything slower (network I/O, a
// lock) to another goroutine. It may call NewTimeout (to re-arm itself) and Cancel; it must not call Stop, which then
// returns ErrStopFromTask. A value that carries its own state can implement Task directly (a lock entry whose Run
// renews the lock), so that scheduling it allocates nothing beyond the Timeout.
type Task interface {
	Run(t *Timeout)
}

// TaskFunc adapts a function to a Task.
type TaskFunc func(t *Timeout)

// Run calls f(t).
func (f TaskFunc) Run(t *Timeout) { f(t) }

// timeoutState is the life cycle of a Timeout. Legal transitions, and who makes them:
//
//	stateInit      -> stateScheduled  worker, when it moves the timeout from the add queue into a bucket
//	stateInit      -> stateCancelled  Cancel before the worker saw it; or NewTimeout that lost a race with Stop
//	stateScheduled -> stateCancelled  Cancel; the timeout is queued for removal from its bucket on the next tick
//	stateScheduled -> stateExpired    worker, which then runs the task (exactly once)
//	stateInit      -> stateStopped    worker exiting after Stop (the timeout is in Stop's result)
//	stateScheduled -> stateStopped    worker exiting after Stop (the timeout is in Stop's result)
//	stateStopped   -> stateCancelled  Cancel after Stop (it never runs either way)
//
// Every transition is a CAS, so Cancel and expiry cannot both win: that is what makes Cancel exact.
type timeoutState int32

const (
	stateInit timeoutState = iota
	stateScheduled
	stateCancelled
	stateExpired
	stateStopped
)

// Timeout is a handle on a task scheduled by Timer.NewTimeout. All its methods are safe for concurrent use and never
// block.
//
// Layout: 64 bytes on 64-bit platforms (one cache line and one allocation size class), so a million pending timeouts
// sharing one Task value cost about 64 MB of heap. The bucket a timeout is in is not stored (buckets are rings with
// a sentinel, so unlinking needs only prev and next), nor are its remaining rounds (the worker derives them from the
// deadline when it visits the bucket), and one link field serves both the add and the cancel queue, which a timeout
// is never in at the same time.
type Timeout struct {
	task  Task   // immutable
	timer *Timer // immutable

	// deadline is the instant, in nanoseconds of the timer's monotonic clock, before which the task must not run.
	// Immutable.
	deadline int64

	state atomic.Int32 // a timeoutState; use loadState and casState

	// next and prev link the timeout into its bucket's ring. Owned by the worker; nil when in no bucket.
	next, prev *Timeout

	// link chains the timeout in the add queue (while stateInit: written by NewTimeout, then by the worker) and later
	// in the cancel queue (written by the one Cancel that moved it from stateScheduled, after the worker cleared it).
	link *Timeout
}

// loadState returns t's current state.
func (t *Timeout) loadState() timeoutState { return timeoutState(t.state.Load()) }

// casState moves t from one state to another if it is still in from, and reports whether it did.
func (t *Timeout) casState(from, to timeoutState) bool {
	return t.state.CompareAndSwap(int32(from), int32(to))
}

// Task returns the task given to NewTimeout. Safe for concurrent use.
func (t *Timeout) Task() Task { return t.task }

// Timer returns the Timer that scheduled t. Safe for concurrent use.
func (t *Timeout) Timer() *Timer { return t.timer }

// IsExpired reports whether the task has been started (it has run or is running). Safe for concurrent use.
func (t *Timeout) IsExpired() bool { return t.loadState() == stateExpired }

// IsCancelled reports whether Cancel succeeded on t. Safe for concurrent use.
func (t *Timeout) IsCancelled() bool { return t.loadState() == stateCancelled }

// Cancel prevents the task from running. It is exact: true means the task has not started and never will; false
// means the task has run, is running, or t was already cancelled. Cancel never blocks and is safe for concurrent use,
// also from a task. The pending count drops at once; the worker unlinks the timeout from its bucket, releasing its
// memory, at the end of the current tick (as in Netty), or, while the worker is idle, when it next wakes (at the
// latest once wakeBacklog cancellations and additions are queued).
//
// Cancelling a timeout that Stop returned also reports true: it never runs either way.
func (t *Timeout) Cancel() bool {
	for {
		switch t.loadState() {
		case stateInit:
			// Still in the add queue: the worker drops it when it sees the state, so nothing needs queueing.
			if t.casState(stateInit, stateCancelled) {
				t.timer.pending.Add(-1)
				return true
			}
		case stateScheduled:
			if t.casState(stateScheduled, stateCancelled) {
				t.timer.pending.Add(-1)
				t.timer.cancels.push(t)
				// The worker unlinks it when it next wakes; it is woken for that only when cancellations pile up
				// (wakeBacklog), so that cancelling costs no wake-up of an idle worker.
				if tm := t.timer; tm.idle.Load() && tm.queued.Add(1) > wakeBacklog {
					tm.wakeIfIdle()
				}
				return true
			}
		case stateStopped:
			// Stop already took it off the pending count.
			if t.casState(stateStopped, stateCancelled) {
				return true
			}
		default: // stateExpired, stateCancelled: terminal
			return false
		}
	}
}

// Package timer is a hashed timing wheel in the shape of Netty's HashedWheelTimer: it runs a very large number of
// short tasks after approximate delays — lock watchdog renewals, response timeouts, reconnect backoff, bounded
// waits — on one goroutine, so that the number of goroutines never grows with the number of timeouts.
//
//	t := timer.New(timer.Config{})
//	to, err := t.NewTimeout(timer.TaskFunc(func(*timer.Timeout) { renew() }), 10*time.Second)
//	...
//	to.Cancel()          // exact: true means renew will never run
//	unrun, err := t.Stop() // the timeouts that never ran
//
// # Tick duration
//
// The worker does not run a timeout at its exact deadline: it works in ticks, runs every timeout whose deadline
// fell within a tick once that tick has ended, and sleeps again. The tick (Config.Tick, default 10 ms) is thus the
// timer's resolution. The worker sleeps through ticks whose bucket is empty (it keeps a bitmap of occupied buckets,
// and a NewTimeout wakes it if it sleeps past the current tick), so a short tick costs CPU only while timeouts fall
// due; an idle Timer does not wake at all. The default suits lock renewals (every 10 s), response timeouts (3 s)
// and waits bounded by a lock's TTL alike.
//
// # Wheel size
//
// Timeouts live in a ring of buckets (Config.WheelSize, a power of two, default 1024): a timeout less than one
// rotation (Tick*WheelSize, 10.24 s by default) away goes into the bucket of the tick its deadline falls in, and
// each tick visits one bucket, so the cost of a tick is proportional to the timeouts due in it, not to all
// timeouts. Timeouts further away wait in a second, coarser ring, one bucket per rotation, and move into the wheel
// when their rotation starts: each timeout is touched about three times however far away it is (Netty's single
// ring revisits it every rotation). Choose a rotation that covers the usual delays.
//
// # Accuracy
//
// Deadlines and ticks are measured on the monotonic clock from the Timer's creation: wall-clock changes move
// nothing. A task never runs before its delay has elapsed. It runs at most about one tick late while the process
// gets CPU and tasks do not block; if the worker falls behind (starvation, a blocked task), it catches up by
// visiting each bucket at most once, running every overdue task — late, never early — and reports the lag to the
// Observer. A flood of NewTimeout calls cannot stall expiry: the worker places at most 100,000 new timeouts (and
// unlinks at most 100,000 cancelled ones) per tick, and leaves the rest queued for the next.
//
// # Scheduling and cancelling
//
// NewTimeout and Timeout.Cancel never block and never wait for the worker: they push onto lock-free queues that the
// worker drains when it next handles a tick, and no lock is ever held while tasks run. A worker that sleeps
// (nothing due for a while) is woken only by a timeout due before it would wake by itself, or once a thousand
// additions and cancellations queued up: a client that arms and cancels timeouts at a high rate (a lock's bounded
// waits, a held lock's lease) does not wake it for each. Cancel is exact — true means the task has not started and
// never will — and the pending count (Timer.Pending, capped by Config.MaxPending) drops at once; the cancelled
// timeout's memory goes when the worker next handles a tick. A Timeout costs 64 bytes of heap while pending; the
// Task is stored as given, so a value implementing Task (a lock entry) costs nothing more.
//
// # Tasks must not block
//
// Every task runs on the one worker goroutine: while a task runs, no other task does. A task must finish in
// microseconds and hand anything slower (network I/O, waiting for a lock or a channel) to another goroutine. Tasks
// that run longer than Config.SlowTask are reported to Config.Observer. A task may call NewTimeout (re-arming itself)
// and Cancel; Stop from a task returns ErrStopFromTask. A task that panics crashes the program, as a panic on any
// goroutine does.
//
// # Settling tasks on close
//
// A task that stands for a caller's outcome (a retry after a backoff) must not vanish when its owner closes. A Group
// keeps such tasks: each runs exactly once, when its delay ends, when the owner calls RunNow (what it waited for has
// happened), or with closed = true when the owner calls Close, so that the owner can fail what it stands for.
//
// # Share one instance
//
// A Timer holds one goroutine (started by the first NewTimeout) and a wheel of WheelSize buckets. Create one per
// client or per process and share it; do not create one per lock, connection or request. Stop it when done: Stop
// waits for the worker to exit and returns the timeouts that never ran.
package timer

package future

import (
	"context"
	"sync"
)

// Driver lets the goroutine that waits for a future do the work that completes
// it, instead of parking while another goroutine does that work and then wakes
// it up. Package conn uses it for a sequential caller: the caller's own Get reads
// the reply from the socket, exactly like a plain net.Conn write+read loop, so a
// round trip costs no goroutine hand-off and no thread wake-up (see "Latency
// lane" in package conn's documentation).
//
// A Driver is attached to a promise with Promise.SetDriver; futures derived by
// Then and Compose inherit the driver of their source. The future package calls
// it in three places, never while holding a lock of the future:
//
//   - Drive, from Get on a pending future, before Get parks;
//   - Completed, from the winning Complete, after the result became visible and
//     the parked Get calls were woken, before the callbacks run;
//   - Unattended, at most once per future, when a future that is still pending
//     gets an observer that does not call Get: an OnComplete callback, or a
//     caller of Done.
//
// A Driver is shared by every future it drives and must be safe for concurrent
// use.
type Driver interface {
	// Drive may block doing the work that completes target: it runs on the
	// goroutine of a Get that would otherwise park. It must return once
	// target.IsDone() reports true, once ctx ends (ctx is Get's context), and
	// whenever it cannot make progress itself (another goroutine is doing the
	// work); Get then parks as usual if target is still pending, so returning
	// early is always correct. It must not complete target with ctx's error:
	// Get reports ctx's end itself and leaves the future pending.
	Drive(ctx context.Context, target Completion)
	// Completed tells the driver that a future it drives has completed, by
	// whatever goroutine: a Drive blocked on behalf of that future (waiting for
	// I/O that may never come, when the future was failed by a cancellation)
	// must return soon. It must not block.
	Completed()
	// Unattended tells the driver that the future's result is awaited without a
	// Get that would drive it: the driver must then produce the result by
	// itself (package conn starts a background reader). It must not block.
	Unattended()
}

// Completion is what Drive needs to know about the future it drives: whether it
// is complete. *Future[T] implements it.
type Completion interface {
	IsDone() bool
}

// SetDriver makes d the driver of p's future (nil removes it). It must be called
// before the future is shared with another goroutine or completed: it is not
// safe for concurrent use with any other method of p or of its future. It does
// not block and allocates nothing.
func (p *Promise[T]) SetDriver(d Driver) { p.f.drv = d }

// CancelledBy records that p's completer completes the future, at the latest
// shortly after done is closed: package conn watches a command's context with
// context.AfterFunc and fails its future with the context's error. A Get whose
// context has this Done channel then waits for the future alone (one channel
// receive) instead of selecting on the future and on the context, and passes a
// context that cannot end to the Driver, which will be told of the cancellation
// by Completed; the result is the same. It must be called before the future is
// shared or completed (it is not safe for concurrent use with any other method),
// does not block and allocates nothing.
func (p *Promise[T]) CancelledBy(done <-chan struct{}) { p.f.cancelledBy = done }

// unattended calls the driver's Unattended the first time a pending future gets
// a non-driving observer. Called with f.mu held; returns the driver to notify
// (after unlocking), or nil.
func (f *Future[T]) unattendedLocked() Driver {
	if f.drv == nil || f.unattended || f.state() != statePending {
		return nil
	}
	f.unattended = true
	return f.drv
}

// Relay is a Driver for a promise that is completed by callbacks on other
// futures, one step after another (package rlock's acquire: an attempt, maybe a
// subscription and another attempt): it forwards to the driver of the step in
// flight, set by Follow. With it, a Get on the promise does the work of each step
// on its own goroutine (in package conn: reads the step's reply itself) instead
// of parking until another goroutine has done it. The zero Relay is ready to use
// and forwards nothing; a Relay must not be copied after first use. Safe for
// concurrent use; its methods never block.
//
// Which steps are left to a Get: a step followed before the first Get or while a
// Get drives. Once a Get has stopped driving with the promise still pending (it
// parks: the promise now waits for something else, a message, a timer), or once
// the promise is observed without Get (OnComplete, Done), the step in flight and
// every later one are marked unattended, so their drivers produce them alone: a
// parked Get never drives again.
type Relay struct {
	mu      sync.Mutex
	d       Driver     // the driver of the step in flight; nil when that step has none
	step    Completion // the step in flight; nil before the first
	driving int        // Gets inside Drive
	// unattended: no Get will drive later steps (a Get parked, or the promise is observed without one).
	unattended bool
}

// Follow registers fn on f like OnComplete and, when r is not nil, makes f the
// step r forwards to: a Get on the promise whose driver is r then drives f.
// Unlike OnComplete it does not tell f's driver that f is unattended while a Get
// may still drive it (see Relay); use it only for a promise whose result somebody
// waits for with Get (with a nil r it registers like OnComplete). fn is a
// completer's plumbing, not user code: it does not run as a callback (see
// InCallback), so it must never block. Follow does not block.
func Follow[T any](r *Relay, f *Future[T], fn func(v T, err error)) {
	if r == nil {
		f.onComplete(fn, true, false)
		return
	}
	r.mu.Lock()
	r.d, r.step = f.drv, f
	unattended := r.unattended && r.driving == 0
	r.mu.Unlock()
	f.onComplete(fn, unattended, false)
}

// Drive is Driver: it drives the step in flight, for target. When it returns
// with no other Get driving and either target still pending (the Get parks) or
// the step still pending (target was completed without it, say failed by a
// cancellation), the step in flight, if still pending, is marked unattended, and
// so are later ones: its result must still be read, and no Get will read it.
func (r *Relay) Drive(ctx context.Context, target Completion) {
	r.mu.Lock()
	d, step := r.d, r.step
	r.driving++
	r.mu.Unlock()
	if d != nil && step != nil && !step.IsDone() {
		d.Drive(ctx, target)
	}
	r.mu.Lock()
	r.driving--
	var notify Driver
	stepPending := r.step != nil && !r.step.IsDone()
	if r.driving == 0 && (!target.IsDone() || stepPending) {
		// The Get parks (target pending), or returns with a step still in flight (target was failed under it: a
		// cancelled call whose command is on its way): either way nobody drives that step or a later one.
		r.unattended = true
		if stepPending {
			notify = r.d
		}
	}
	r.mu.Unlock()
	if notify != nil {
		notify.Unattended()
	}
}

// Completed is Driver: a Drive blocked in the step's driver must return.
func (r *Relay) Completed() {
	r.mu.Lock()
	d := r.d
	r.mu.Unlock()
	if d != nil {
		d.Completed()
	}
}

// Unattended is Driver: the promise is awaited without a Get, so the step in
// flight and later ones must complete without one.
func (r *Relay) Unattended() {
	r.mu.Lock()
	r.unattended = true
	d := r.d
	r.mu.Unlock()
	if d != nil {
		d.Unattended()
	}
}

package future

import (
	"context"
	"sync"
	"sync/atomic"
)

// state is the life cycle of a Future. Legal transitions, each made once:
//
//	statePending    -> stateCompleting  by the one Complete call that wins the CAS
//	stateCompleting -> stateNotifying   under mu, when callbacks are waiting to run
//	stateCompleting -> stateDone        under mu, when no callback is registered
//	stateNotifying  -> stateDone        under mu, when the completer finds the callback queue empty
//
// Completed futures are born in stateDone. The result (v, err) is written by the
// winner between the CAS and the transition out of stateCompleting, and is
// read-only from then on: every reader loads state first (acquire) and reads the
// result only when state >= stateNotifying.
type state uint32

const (
	// statePending: no result yet.
	statePending state = iota
	// stateCompleting: a completer won; the result is being stored and is not yet visible.
	stateCompleting
	// stateNotifying: the result is visible; the completer is still running callbacks,
	// and OnComplete queues behind them to keep registration order.
	stateNotifying
	// stateDone: the result is visible and every callback registered so far has run;
	// OnComplete runs new callbacks at once on the caller's goroutine.
	stateDone
)

// Future is the read side of a result of type T that becomes available once:
// a value, an error, or both. It is this project's counterpart of Redisson's
// RFuture: every asynchronous call returns one, and each blocking call is the
// asynchronous call followed by Get.
//
// A Future is obtained from Promise.Future, Completed, Then, Compose or All; the
// zero Future is never completed. All methods are safe for concurrent use by any
// number of goroutines. A Future must not be copied after first use.
type Future[T any] struct {
	st atomic.Uint32 // a state; see the transition list above
	// unattended records that drv.Unattended was called (once per future);
	// guarded by mu. (Next to st, in what would be padding: the promise is the
	// one allocation per Redis command, and its size class matters.)
	unattended bool
	// userCB records that a callback of user code (OnComplete) was registered:
	// the callbacks then run as callbacks (runMarked), so that a blocking call
	// inside them fails at once. Registrations by the package's own plumbing
	// (Follow, and Then's and Compose's on their source, which mark the user's
	// function themselves) do not set it. Guarded by mu; sticky.
	userCB bool
	// drv, when set (Promise.SetDriver, or inherited by Then and Compose before
	// the future is shared), lets a blocking Get do the work that completes the
	// future; immutable once the future is shared. See Driver.
	drv Driver
	// cancelledBy, when set (Promise.CancelledBy), is the Done channel of a
	// context whose end the completer turns into a completion; immutable once
	// the future is shared.
	cancelledBy <-chan struct{}

	mu sync.Mutex // guards the fields below
	// waiters is a doubly linked list of Get callers parked on this future. The
	// completer detaches the whole list under mu and wakes each after unlocking.
	waiters *waiter
	// done is created by the first Done call made before completion and closed by
	// the completer; Done calls after completion return a shared closed channel, so
	// a future that nobody selects on never allocates one.
	done chan struct{}
	// cb0 and more hold callbacks waiting to run, in registration order: cb0
	// first, then more.fns. The first callback is stored inline so the common
	// single-callback case allocates nothing; more (a pointer, not a slice, to
	// keep the future small) is allocated by the second. cb0 == nil implies
	// more == nil.
	cb0  func(T, error)
	more *moreCallbacks[T]

	// v and err are the result: written once by the winning completer while st is
	// stateCompleting, read-only once st >= stateNotifying.
	v   T
	err error
}

// moreCallbacks holds the callbacks registered after the first one, with room
// for three in the same allocation.
type moreCallbacks[T any] struct {
	fns    []func(T, error)
	inline [3]func(T, error)
}

// fnsOf returns m's callbacks (none for a nil m).
func fnsOf[T any](m *moreCallbacks[T]) []func(T, error) {
	if m == nil {
		return nil
	}
	return m.fns
}

// closedChan is returned by Done once a future is complete, so that Done on a
// completed future allocates nothing.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (f *Future[T]) state() state { return state(f.st.Load()) }

// complete reports whether the result is visible.
func (f *Future[T]) complete() bool { return f.state() >= stateNotifying }

// Get waits until the future is complete and returns its result.
//
// Get blocks until completion or until ctx is done, whichever comes first. If the
// future is already complete, Get returns its result without looking at ctx.
// If ctx ends first, Get returns the zero T and ctx.Err() and leaves the future
// untouched: it still completes, and other waiters, callbacks and later Get calls
// observe its result. If completion and the end of ctx race, Get returns the
// result whenever it is available by the time Get notices ctx.
//
// So ctx bounds this wait only, never the operation the future stands for: an
// operation given up on by Get goes on, and what it obtains (in package rlock, a
// lock granted to an abandoned acquire) belongs to whoever holds the future. To
// abandon the operation itself, cancel the context it was started with (package
// rlock's Async calls then release a grant in flight), and still handle a result
// that completed first, for example with OnComplete.
//
// Get returns as soon as the result is visible, which may be before the
// future's callbacks have run (they run on the completer's goroutine after the
// waiters are woken). A ctx whose Done channel is nil (context.Background) makes
// Get wait without a select; a nil ctx is taken as context.Background(). Get is
// safe for concurrent use.
//
// Inside a callback (see InCallback), Get on a future that is still pending
// returns ErrInCallback at once instead of blocking: the callback runs on the
// goroutine that completes futures, which may be the one that would complete f.
//
// Cost: Get on a complete future is one atomic load. A Get that has to block
// parks on a wake-up token borrowed from a process-wide sync.Pool (see waiter),
// so it allocates nothing in steady state; it allocates no per-future channel.
// On a future with a Driver, Get first lets the driver work on its goroutine
// (see Driver) and parks only if the future is still pending after that.
func (f *Future[T]) Get(ctx context.Context) (T, error) {
	if f.complete() {
		return f.v, f.err
	}
	if f.state() == statePending && InCallback() {
		var zero T
		return zero, ErrInCallback
	}
	if ctx == nil {
		ctx = context.Background()
	}
	done := ctx.Done()
	dctx := ctx
	if done != nil {
		select {
		case <-done:
			var zero T
			return zero, ctx.Err()
		default:
		}
		if done == f.cancelledBy {
			// The completer completes f when ctx ends: waiting for f alone is
			// enough, and a plain receive is cheaper than a select (whose lock
			// on ctx's Done channel every waiter of that context shares).
			done, dctx = nil, context.Background()
		}
	}

	if f.drv != nil {
		// The goroutine that waits does the work (package conn: reads the reply
		// itself); it parks below only if the driver could not complete f.
		f.drv.Drive(dctx, f)
		if f.complete() {
			return f.v, f.err
		}
		if done != nil && ctx.Err() != nil {
			var zero T
			return zero, ctx.Err()
		}
	}

	w := getWaiter()
	f.mu.Lock()
	if f.complete() {
		f.mu.Unlock()
		putWaiter(w)
		return f.v, f.err
	}
	f.pushWaiterLocked(w)
	f.mu.Unlock()

	if done == nil {
		<-w.wake
		putWaiter(w)
		return f.v, f.err
	}
	select {
	case <-w.wake:
	case <-done:
		f.mu.Lock()
		if !f.complete() {
			// Still pending: nobody will send on w.wake, so it is empty and can
			// go back to the pool once unlinked.
			f.removeWaiterLocked(w)
			f.mu.Unlock()
			putWaiter(w)
			var zero T
			return zero, ctx.Err()
		}
		f.mu.Unlock()
		// The completer detached w before ctx was noticed and owes it exactly one
		// token, sent right after its critical section without blocking (the
		// channel has room for one). Take it so w goes back to the pool empty.
		<-w.wake
	}
	putWaiter(w)
	return f.v, f.err
}

// Done returns a channel that is closed when the future completes, for use in a
// select. It does not block and is safe for concurrent use.
//
// The channel is created lazily, by the first Done call made before completion
// (one allocation per future that is selected on while pending); once the future
// is complete, Done returns an already-closed channel shared by all futures.
// Prefer Get when a context bounds the wait: it allocates nothing.
func (f *Future[T]) Done() <-chan struct{} {
	if f.complete() {
		return closedChan
	}
	f.mu.Lock()
	if f.complete() {
		f.mu.Unlock()
		return closedChan
	}
	if f.done == nil {
		f.done = make(chan struct{})
	}
	done := f.done
	d := f.unattendedLocked() // a select on Done does not drive the future
	f.mu.Unlock()
	if d != nil {
		d.Unattended()
	}
	return done
}

// IsDone reports whether the future is complete. It does not block and is safe
// for concurrent use.
func (f *Future[T]) IsDone() bool { return f.complete() }

// Peek returns the result without blocking: done is false, and v and err are
// zero, while the future is pending. It is safe for concurrent use.
func (f *Future[T]) Peek() (v T, err error, done bool) {
	if f.complete() {
		return f.v, f.err, true
	}
	return v, nil, false
}

// OnComplete registers fn to run once with the result. It is safe for concurrent
// use and never blocks on the future.
//
// Callbacks run exactly once each, in registration order:
//   - registered while the future is pending, fn runs later on the goroutine that
//     completes the future, inside its Complete call, after all Get and Done
//     waiters have been woken;
//   - registered once the future is complete and its earlier callbacks have all
//     run, fn runs immediately on the caller's goroutine, before OnComplete returns;
//   - registered while the completer is still running earlier callbacks, fn is
//     queued behind them and the completer runs it, so order is kept even across
//     goroutines.
//
// Callbacks must not block and should be short: in package conn the completer is
// a network event loop, and every connection it serves waits while a callback
// runs. Hand slow work to another goroutine. A callback may call OnComplete on
// the same future (the new callback runs after the current ones) and may complete
// other promises. A blocking call inside a callback fails at once with
// ErrInCallback instead of blocking — Get on a pending future, and package
// rlock's blocking calls such as Lock and Unlock — wherever the callback runs,
// also when it runs at once on the registering goroutine (see InCallback); use
// the asynchronous forms, or start a goroutine for the blocking work.
//
// A callback that panics does not stop the others: see Promise.Complete for what
// happens to the panic. A nil fn is ignored.
func (f *Future[T]) OnComplete(fn func(v T, err error)) {
	f.onComplete(fn, true, true)
}

// onComplete implements OnComplete. unattended is false for the registrations
// of Then and Compose on their source: the derived future inherits the source's
// driver, so a Get on it still drives the source. user is false for the
// package's own plumbing (see userCB).
func (f *Future[T]) onComplete(fn func(v T, err error), unattended, user bool) {
	if fn == nil {
		return
	}
	if f.state() == stateDone {
		f.callNow(fn, user)
		return
	}
	f.mu.Lock()
	if f.state() == stateDone {
		f.mu.Unlock()
		f.callNow(fn, user)
		return
	}
	f.userCB = f.userCB || user
	var d Driver
	if unattended {
		d = f.unattendedLocked()
	}
	// Pending, completing or notifying: the completer takes the queue under mu
	// and keeps draining until it finds it empty, so fn cannot be lost.
	switch {
	case f.cb0 == nil:
		f.cb0 = fn
	case f.more == nil:
		// Room for a few more in the same allocation: append would grow 1, 2,
		// 4, one allocation each.
		m := new(moreCallbacks[T])
		m.fns = append(m.inline[:0], fn)
		f.more = m
	default:
		f.more.fns = append(f.more.fns, fn)
	}
	f.mu.Unlock()
	if d != nil {
		d.Unattended()
	}
}

// callNow runs a callback registered once f is complete, on the registering
// goroutine: as a callback (runMarked) when it is user code.
func (f *Future[T]) callNow(fn func(v T, err error), user bool) {
	if user {
		runMarked(func() { fn(f.v, f.err) })
		return
	}
	fn(f.v, f.err)
}

// pushWaiterLocked links w at the head of the waiter list. Order among Get
// waiters is irrelevant: all are woken together.
func (f *Future[T]) pushWaiterLocked(w *waiter) {
	w.prev = nil
	w.next = f.waiters
	if f.waiters != nil {
		f.waiters.prev = w
	}
	f.waiters = w
}

// removeWaiterLocked unlinks w, which must be in the list (the future is still
// pending, so the completer has not detached it).
func (f *Future[T]) removeWaiterLocked(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		f.waiters = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	}
	w.next, w.prev = nil, nil
}

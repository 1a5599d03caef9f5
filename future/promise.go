package future

// Promise is the write side of a Future: whoever holds it completes the future,
// once. Its methods are safe for concurrent use by any number of completers; the
// first completion wins and the others report false.
//
// The Future lives inside the Promise, so NewPromise is the only allocation a
// request/response pair needs and Future() hands out a pointer into it.
type Promise[T any] struct {
	f Future[T]
}

// NewPromise returns a pending promise. It allocates once (the promise, with its
// future inside) and does not block.
func NewPromise[T any]() *Promise[T] {
	return new(Promise[T])
}

// Future returns the read side of p. It allocates nothing, does not block, is
// safe for concurrent use, and returns the same pointer every time.
func (p *Promise[T]) Future() *Future[T] { return &p.f }

// Complete sets the result of the future to (v, err) if no completion happened
// before, and reports whether this call won. A losing call changes nothing.
//
// The winning call, in this order: publishes the result (IsDone, Peek and Get
// see it from here on), wakes every blocked Get, tells the future's Driver (if
// any) with Driver.Completed, closes the Done channel, then
// runs the registered callbacks on the calling goroutine, in registration order,
// including callbacks that other goroutines register while it runs them. So the
// winner returns only once the callbacks have run; it never waits for anything
// else. Safe for concurrent use.
//
// Panics in callbacks: the future is already complete and every waiter already
// woken when callbacks run, so a panic cannot leave it half-completed. Each
// callback runs under recover; after all of them have run, the winning Complete
// panics with a *PanicError carrying the first panic's value and stack (later
// panics in the same batch are dropped). The panic is re-raised rather than
// swallowed because it reports a bug; a completer that must survive (an event
// loop) can recover it and find the stack in the PanicError. A callback that
// calls runtime.Goexit ends the completer's goroutine, but the remaining
// callbacks still run, on the way out; panics among them are then dropped.
func (p *Promise[T]) Complete(v T, err error) bool {
	f := &p.f
	if !f.st.CompareAndSwap(uint32(statePending), uint32(stateCompleting)) {
		return false
	}
	f.v, f.err = v, err

	f.mu.Lock()
	waiters, done, cb0, cbs, user := f.waiters, f.done, f.cb0, fnsOf(f.more), f.userCB
	f.waiters, f.done, f.cb0, f.more = nil, nil, nil, nil
	if cb0 != nil {
		f.st.Store(uint32(stateNotifying))
	} else {
		f.st.Store(uint32(stateDone))
	}
	f.mu.Unlock()

	// Waiters first: waking them is a non-blocking send each, and they must not
	// wait behind callbacks.
	wakeAll(waiters)
	if f.drv != nil {
		// A Get may be driving f (blocked in the driver's I/O) while another
		// goroutine completed it: a cancellation, a failed connection.
		f.drv.Completed()
	}
	if done != nil {
		close(done)
	}
	if cb0 != nil {
		f.notify(cb0, cbs, user, true)
	}
	return true
}

// Succeed completes the future with value v and a nil error. See Complete.
func (p *Promise[T]) Succeed(v T) bool { return p.Complete(v, nil) }

// Fail completes the future with err and the zero value of T. See Complete.
// A nil err completes it successfully with the zero value.
func (p *Promise[T]) Fail(err error) bool {
	var zero T
	return p.Complete(zero, err)
}

// Completed returns a future that is already complete with (v, err). It
// allocates once and does not block. Callbacks registered on it run immediately
// on the caller's goroutine.
func Completed[T any](v T, err error) *Future[T] {
	f := &Future[T]{v: v, err: err}
	f.st.Store(uint32(stateDone))
	return f
}

// notify runs the callbacks taken by the winning completer, then keeps taking
// whatever other goroutines queued meanwhile, until it finds the queue empty and
// moves the future to stateDone under mu. Until then OnComplete queues new
// callbacks here instead of running them, which is what keeps registration order
// across goroutines. Each entry is cleared before it runs, so that after a
// runtime.Goexit the deferred call resumes with exactly the callbacks not yet run.
// A batch that holds user callbacks (user: userCB when it was taken) runs as a
// callback (runMarked), so that a blocking call inside it fails at once.
func (f *Future[T]) notify(cb0 func(T, error), cbs []func(T, error), user, reraise bool) {
	var first *PanicError
	normal := false
	defer func() {
		if !normal {
			// Only runtime.Goexit in a callback gets here (call recovers panics):
			// the goroutine is going away, but the remaining callbacks must
			// still run once each and the future must reach stateDone.
			f.notify(cb0, cbs, user, false)
		}
	}()
	for {
		if user {
			runMarked(func() { first = f.runBatch(&cb0, cbs, first) })
		} else {
			first = f.runBatch(&cb0, cbs, first)
		}
		f.mu.Lock()
		cb0, cbs, user = f.cb0, fnsOf(f.more), f.userCB
		f.cb0, f.more = nil, nil
		if cb0 == nil {
			f.st.Store(uint32(stateDone))
			f.mu.Unlock()
			break
		}
		f.mu.Unlock()
	}
	normal = true
	if first != nil && reraise {
		panic(first)
	}
}

// runBatch runs the callbacks *cb0 and cbs, clearing each before it runs (see
// notify), and returns the first panic among first and theirs.
func (f *Future[T]) runBatch(cb0 *func(T, error), cbs []func(T, error), first *PanicError) *PanicError {
	if fn := *cb0; fn != nil {
		*cb0 = nil
		first = keepFirst(first, f.call(fn))
	}
	for i, fn := range cbs {
		if fn != nil {
			cbs[i] = nil
			first = keepFirst(first, f.call(fn))
		}
	}
	return first
}

// call runs one callback and returns its panic, if any, as a *PanicError.
func (f *Future[T]) call(fn func(T, error)) (pe *PanicError) {
	defer func() {
		if r := recover(); r != nil {
			pe = newPanicError(r)
		}
	}()
	fn(f.v, f.err)
	return nil
}

func keepFirst(first, next *PanicError) *PanicError {
	if first != nil {
		return first
	}
	return next
}

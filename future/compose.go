package future

import (
	"errors"
	"slices"
	"sync/atomic"
)

// Then returns a future completed with fn's result, where fn receives f's result
// (value and error) once f completes: a map that can also transform or recover
// errors. It does not block and is safe for concurrent use.
//
// fn runs as a callback of f (see OnComplete): on f's completer goroutine, or
// immediately on the caller's goroutine when f is already complete. So fn must
// not block. If fn panics, the returned future fails with a *PanicError and the
// panic is re-raised, as for any callback; if fn calls runtime.Goexit, the
// returned future fails with ErrAborted. A nil fn yields a future failed with
// ErrNilFunc.
//
// The returned future inherits f's Driver, if any: a Get on it drives f.
//
// Cost: two allocations (the new promise and the callback closure).
func Then[T, U any](f *Future[T], fn func(v T, err error) (U, error)) *Future[U] {
	if fn == nil {
		var zero U
		return Completed(zero, ErrNilFunc)
	}
	p := NewPromise[U]()
	p.f.drv = f.drv // a Get on the result drives f
	f.onComplete(func(v T, err error) {
		returned := false
		defer failIfAborted(p, &returned)
		var u U
		runMarked(func() { u, err = fn(v, err) })
		returned = true
		p.Complete(u, err)
	}, false, false)
	return p.Future()
}

// Compose returns a future that completes like the future fn returns, where fn
// receives f's result once f completes: a flat map, for continuing with another
// asynchronous call (for example: acquire, then subscribe, then retry). It does
// not block and is safe for concurrent use.
//
// fn runs as a callback of f (see Then for where, and for panics); the returned
// future is completed by a callback on fn's future. A nil fn yields a future
// failed with ErrNilFunc; fn returning nil fails the result with ErrNilFuture.
// The returned future inherits f's Driver, if any; fn's future is observed with
// OnComplete (so its driver, if any, is told it is unattended).
func Compose[T, U any](f *Future[T], fn func(v T, err error) *Future[U]) *Future[U] {
	if fn == nil {
		var zero U
		return Completed(zero, ErrNilFunc)
	}
	p := NewPromise[U]()
	p.f.drv = f.drv // a Get on the result drives f; fn's future is not known yet
	f.onComplete(func(v T, err error) {
		returned := false
		defer failIfAborted(p, &returned)
		var g *Future[U]
		runMarked(func() { g = fn(v, err) })
		returned = true
		if g == nil {
			p.Fail(ErrNilFuture)
			return
		}
		// An attended registration would be wrong here: a Get on the result may
		// have stopped driving by now, so g's driver must not count on it.
		g.onComplete(func(u U, err error) { p.Complete(u, err) }, true, false)
	}, false, false)
	return p.Future()
}

// failIfAborted is deferred by the callbacks of Then and Compose: a user
// function that does not return must not leave the derived future pending
// forever. On a panic the future fails with the *PanicError before the panic
// propagates; on runtime.Goexit (recover reports nil) it fails with ErrAborted
// and the goroutine goes on exiting. Once fn has returned there is nothing to
// do: a later panic comes from p's own callbacks, after p is complete.
func failIfAborted[U any](p *Promise[U], returned *bool) {
	if *returned {
		return
	}
	r := recover()
	if r == nil {
		p.Fail(ErrAborted)
		return
	}
	pe := newPanicError(r)
	p.Fail(pe)
	panic(pe)
}

// All returns a future that completes once every future in fs has completed,
// successful or not; it does not fail early, because callers such as RedLock need
// every outcome (to count acquisitions and release what was acquired). It does
// not block and is safe for concurrent use.
//
// The value holds each future's value in argument order (the zero value where a
// future failed). The error is nil when all succeeded, the only error when one
// failed, and errors.Join of the errors in argument order otherwise; Peek each
// input for per-future outcomes. A nil entry counts as failed with ErrNilFuture.
// All with no futures is complete at once with an empty slice.
//
// All completes on the goroutine that completes the last input (or on the
// caller's when every input is already complete). Cost: three allocations plus
// one callback closure per input, and two more when inputs fail (the error list).
func All[T any](fs ...*Future[T]) *Future[[]T] {
	a := &allOf[T]{
		fs:   slices.Clone(fs), // the caller may reuse its slice
		vals: make([]T, len(fs)),
	}
	a.left.Store(int64(len(fs)) + 1) // +1: the registering loop holds one count
	for i, f := range a.fs {
		if f == nil {
			a.arrive()
			continue
		}
		f.onComplete(func(v T, _ error) {
			a.vals[i] = v
			a.arrive()
		}, true, false)
	}
	a.arrive() // release the loop's count: completes here if all were done
	return a.p.Future()
}

// allOf is the shared state of one All call.
type allOf[T any] struct {
	p    Promise[[]T]
	fs   []*Future[T]
	vals []T // element i written once by input i's callback, before its arrive
	left atomic.Int64
}

// arrive counts one input (or the registering loop) as done; the last arrival
// completes the promise. The atomic decrement orders every vals write before it.
func (a *allOf[T]) arrive() {
	if a.left.Add(-1) != 0 {
		return
	}
	var errs []error
	for _, f := range a.fs {
		if f == nil {
			errs = append(errs, ErrNilFuture)
		} else if _, err, _ := f.Peek(); err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	switch len(errs) {
	case 0:
	case 1:
		err = errs[0]
	default:
		err = errors.Join(errs...)
	}
	a.p.Complete(a.vals, err)
}

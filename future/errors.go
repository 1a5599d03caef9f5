package future

import (
	"errors"
	"fmt"
	"runtime/debug"
)

var (
	// ErrNilFunc is returned (as the error of the resulting future) when Then or
	// Compose is called with a nil function. Pass a function.
	ErrNilFunc = errors.New("future: nil function passed to Then or Compose; pass a function")
	// ErrNilFuture is returned (as the error of the resulting future) when the
	// function given to Compose returns a nil *Future, or when All is given a nil
	// future. Return or pass a future, e.g. Completed(v, err).
	ErrNilFuture = errors.New("future: nil *Future; use Completed(v, err) for a result that is already known")
	// ErrAborted is returned (as the error of the resulting future) when the
	// function given to Then or Compose ended its goroutine with runtime.Goexit
	// (t.FailNow does) instead of returning. Return a result or an error instead.
	ErrAborted = errors.New("future: the function given to Then or Compose called runtime.Goexit instead of returning")
	// ErrInCallback is returned by Get when it is called inside a callback (see
	// InCallback) on a future that is still pending, and by the blocking calls of
	// packages built on this one in the same situation: a callback runs on the
	// goroutine that completes futures (a network event loop, a timer worker), so
	// waiting there stalls every result that goroutine delivers, and may wait for
	// itself forever. Use the asynchronous form and OnComplete, or hand the
	// blocking call to another goroutine.
	ErrInCallback = errors.New("future: blocking call inside a callback; use the async form with OnComplete, or call it from another goroutine")
)

// PanicError reports a panic inside a callback or inside the function given to
// Then or Compose. The completer re-panics with it once every callback has run
// (see Promise.Complete), and a future derived by Then or Compose whose function
// panicked fails with it. Use errors.As to reach it; Unwrap returns the panic
// value when that value is an error.
type PanicError struct {
	// Value is the value passed to panic.
	Value any
	// Stack is the stack of the goroutine at the panic, as debug.Stack reports it.
	Stack []byte
}

// newPanicError wraps a recovered value; it must be called from the deferred
// function that recovered, so that the stack is still the panicking one. A value
// that already is a *PanicError (a nested future's callback) is kept as is.
func newPanicError(r any) *PanicError {
	if pe, ok := r.(*PanicError); ok {
		return pe
	}
	return &PanicError{Value: r, Stack: debug.Stack()}
}

// Error includes the stack, because a re-raised panic prints only Error() and
// the re-raise site says nothing about where the callback failed.
func (e *PanicError) Error() string {
	return fmt.Sprintf("future: callback panicked: %v (callbacks must not panic; fix the callback)\n\n%s", e.Value, e.Stack)
}

// Unwrap returns Value when it is an error, so errors.Is and errors.As see it.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

package future_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/future"
)

// completeRecovering completes p and returns what its Complete call panicked
// with, if anything.
func completeRecovering[T any](p *future.Promise[T], v T) (won bool, panicked any) {
	defer func() { panicked = recover() }()
	return p.Succeed(v), nil
}

func TestPanickingCallbackRunsTheRestThenRepanics(t *testing.T) {
	p := future.NewPromise[int]()
	f := p.Future()
	var ran []int
	f.OnComplete(func(int, error) { ran = append(ran, 1) })
	f.OnComplete(func(int, error) { panic("first") })
	f.OnComplete(func(int, error) { ran = append(ran, 3) })
	f.OnComplete(func(int, error) { panic(errBoom) }) // a later panic: dropped
	f.OnComplete(func(int, error) { ran = append(ran, 5) })

	parked := make(chan int)
	go func() { // a parked waiter; owned by this test, waited for via parked
		v, _ := f.Get(context.Background())
		parked <- v
	}()
	awaitParked(t, f, 1)

	_, r := completeRecovering(p, 11)
	pe, ok := r.(*future.PanicError)
	if !ok {
		t.Fatalf("Complete panicked with %T %v, want *future.PanicError", r, r)
	}
	if pe.Value != "first" {
		t.Fatalf("PanicError.Value = %v, want the first panic", pe.Value)
	}
	if !strings.Contains(string(pe.Stack), "panic_test.go") {
		t.Fatalf("PanicError.Stack does not show the panicking callback:\n%s", pe.Stack)
	}
	if !strings.Contains(pe.Error(), "first") {
		t.Fatalf("Error() = %q", pe.Error())
	}
	if !slices.Equal(ran, []int{1, 3, 5}) {
		t.Fatalf("callbacks that ran: %v, want [1 3 5]", ran)
	}
	if v := <-parked; v != 11 {
		t.Fatalf("parked Get got %d", v)
	}
	wantResult(t, f, 11, nil)
	late := false
	f.OnComplete(func(int, error) { late = true })
	if !late {
		t.Fatal("after a panicking notification, OnComplete must run callbacks at once")
	}
}

func TestPanicErrorUnwrapsAnErrorValue(t *testing.T) {
	p := future.NewPromise[int]()
	p.Future().OnComplete(func(int, error) { panic(errBoom) })
	_, r := completeRecovering(p, 1)
	err, ok := r.(error)
	if !ok || !errors.Is(err, errBoom) {
		t.Fatalf("recovered %v; want an error that Is errBoom", r)
	}
	var pe *future.PanicError
	if !errors.As(err, &pe) {
		t.Fatal("errors.As *PanicError failed")
	}
}

// runtime.Goexit (t.FailNow does it) in a callback ends the completer's
// goroutine; the callbacks behind it must still run, and the future must not be
// left in its notifying state.
func TestGoexitInCallbackStillRunsTheRest(t *testing.T) {
	p := future.NewPromise[int]()
	f := p.Future()
	var ran []int
	f.OnComplete(func(int, error) { ran = append(ran, 1) })
	f.OnComplete(func(int, error) { runtime.Goexit() })
	f.OnComplete(func(int, error) { ran = append(ran, 3) })
	f.OnComplete(func(int, error) { panic("dropped: the goroutine is exiting") })
	f.OnComplete(func(int, error) { ran = append(ran, 5) })
	exited := make(chan struct{})
	go func() { // the completer; owned by this test, waited for via exited
		defer close(exited)
		p.Succeed(1)
		t.Error("Goexit in a callback must end the completer's goroutine")
	}()
	<-exited
	if !slices.Equal(ran, []int{1, 3, 5}) {
		t.Fatalf("callbacks that ran: %v, want [1 3 5]", ran)
	}
	late := false
	f.OnComplete(func(int, error) { late = true })
	if !late {
		t.Fatal("the future was left notifying")
	}
}

func TestOnCompleteOnACompleteFuturePropagatesThePanicDirectly(t *testing.T) {
	f := future.Completed(1, nil)
	defer func() {
		if r := recover(); r != "direct" {
			t.Fatalf("recovered %v, want the callback's own panic value", r)
		}
	}()
	f.OnComplete(func(int, error) { panic("direct") })
	t.Fatal("OnComplete returned")
}

package future_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/locksmith-go/locksmith/future"
)

func TestThenMapsValues(t *testing.T) {
	p := future.NewPromise[int]()
	g := future.Then(p.Future(), func(v int, err error) (string, error) {
		return strconv.Itoa(v * 2), err
	})
	if g.IsDone() {
		t.Fatal("derived future complete before its source")
	}
	p.Succeed(21)
	wantResult(t, g, "42", nil)

	// On an already complete source, Then completes before returning.
	wantResult(t, future.Then(future.Completed(1, nil), func(v int, _ error) (int, error) { return v + 1, nil }), 2, nil)
}

func TestThenPropagatesAndTransformsErrors(t *testing.T) {
	errMapped := errors.New("mapped")
	p := future.NewPromise[int]()
	passed := future.Then(p.Future(), func(v int, err error) (int, error) { return v, err })
	mapped := future.Then(p.Future(), func(v int, err error) (int, error) {
		if err != nil {
			return -1, errors.Join(errMapped, err)
		}
		return v, nil
	})
	recovered := future.Then(p.Future(), func(v int, err error) (int, error) {
		if errors.Is(err, errBoom) {
			return 0, nil
		}
		return v, err
	})
	p.Fail(errBoom)
	wantResult(t, passed, 0, errBoom)
	wantResult(t, mapped, -1, errMapped)
	wantResult(t, mapped, -1, errBoom)
	wantResult(t, recovered, 0, nil)
}

func TestThenChains(t *testing.T) {
	p := future.NewPromise[int]()
	f := p.Future()
	for range 10 {
		f = future.Then(f, func(v int, err error) (int, error) { return v + 1, err })
	}
	p.Succeed(0)
	if v, err := f.Get(context.Background()); v != 10 || err != nil {
		t.Fatalf("got (%v, %v), want (10, nil)", v, err)
	}
}

func TestThenWithPanickingFunctionFailsTheDerivedFuture(t *testing.T) {
	p := future.NewPromise[int]()
	g := future.Then(p.Future(), func(int, error) (int, error) { panic("mapper") })
	_, r := completeRecovering(p, 1)
	if _, ok := r.(*future.PanicError); !ok {
		t.Fatalf("Complete panicked with %T %v, want *future.PanicError", r, r)
	}
	_, err, ok := g.Peek()
	var pe *future.PanicError
	if !ok || !errors.As(err, &pe) || pe.Value != "mapper" {
		t.Fatalf("derived future: (%v, %v); want failed with the PanicError", err, ok)
	}
}

func TestThenAndComposeWithNilFunction(t *testing.T) {
	wantResult(t, future.Then[int, int](future.Completed(1, nil), nil), 0, future.ErrNilFunc)
	wantResult(t, future.Compose[int, int](future.Completed(1, nil), nil), 0, future.ErrNilFunc)
}

func TestComposeWaitsForTheInnerFuture(t *testing.T) {
	outer := future.NewPromise[string]()
	inner := future.NewPromise[int]()
	var gotKey string
	g := future.Compose(outer.Future(), func(key string, err error) *future.Future[int] {
		if err != nil {
			return future.Completed(0, err)
		}
		gotKey = key
		return inner.Future()
	})
	outer.Succeed("k")
	if gotKey != "k" {
		t.Fatalf("fn got %q", gotKey)
	}
	if g.IsDone() {
		t.Fatal("composed future complete before the inner one")
	}
	inner.Complete(7, errBoom)
	wantResult(t, g, 7, errBoom)
}

func TestComposePropagatesTheOuterError(t *testing.T) {
	outer := future.NewPromise[string]()
	called := false
	g := future.Compose(outer.Future(), func(_ string, err error) *future.Future[int] {
		called = true
		if err != nil {
			return future.Completed(0, err)
		}
		return future.Completed(1, nil)
	})
	outer.Fail(errBoom)
	if !called {
		t.Fatal("fn must see errors too")
	}
	wantResult(t, g, 0, errBoom)
}

func TestComposeWithNilInnerFuture(t *testing.T) {
	g := future.Compose(future.Completed(1, nil), func(int, error) *future.Future[int] { return nil })
	wantResult(t, g, 0, future.ErrNilFuture)
}

func TestComposeWithPanickingFunctionFailsTheDerivedFuture(t *testing.T) {
	p := future.NewPromise[int]()
	g := future.Compose(p.Future(), func(int, error) *future.Future[int] { panic("composer") })
	if _, r := completeRecovering(p, 1); r == nil {
		t.Fatal("the panic must be re-raised")
	}
	var pe *future.PanicError
	if _, err, ok := g.Peek(); !ok || !errors.As(err, &pe) {
		t.Fatalf("derived future: (%v, %v); want failed with a PanicError", err, ok)
	}
}

func TestAllWaitsForEveryFutureAndKeepsArgumentOrder(t *testing.T) {
	ps := make([]*future.Promise[int], 4)
	fs := make([]*future.Future[int], len(ps))
	for i := range ps {
		ps[i] = future.NewPromise[int]()
		fs[i] = ps[i].Future()
	}
	all := future.All(fs...)
	fs[0] = nil // All must not depend on the caller's slice
	for _, i := range []int{2, 0, 3} {
		ps[i].Succeed(i * 10)
		if all.IsDone() {
			t.Fatalf("All complete with input 1 still pending (after %d)", i)
		}
	}
	ps[1].Succeed(10)
	v, err, ok := all.Peek()
	if !ok || err != nil || !slices.Equal(v, []int{0, 10, 20, 30}) {
		t.Fatalf("All: (%v, %v, %v)", v, err, ok)
	}
}

func TestAllReportsErrorsWithoutFailingEarly(t *testing.T) {
	errOther := errors.New("other")
	a, b, c := future.NewPromise[int](), future.NewPromise[int](), future.NewPromise[int]()
	all := future.All(a.Future(), b.Future(), c.Future())
	b.Fail(errBoom)
	if all.IsDone() {
		t.Fatal("All must wait for every input, also after a failure")
	}
	a.Succeed(1)
	c.Fail(errOther)
	v, err, ok := all.Peek()
	if !ok || !slices.Equal(v, []int{1, 0, 0}) || !errors.Is(err, errBoom) || !errors.Is(err, errOther) {
		t.Fatalf("All: (%v, %v, %v)", v, err, ok)
	}

	one := future.All(future.Completed(1, nil), future.Completed(0, errBoom))
	if _, err, _ := one.Peek(); err != errBoom {
		t.Fatalf("a single failure must be returned as is, got %v", err)
	}
}

func TestAllEdgeCases(t *testing.T) {
	v, err, ok := future.All[int]().Peek()
	if !ok || err != nil || len(v) != 0 {
		t.Fatalf("All(): (%v, %v, %v)", v, err, ok)
	}
	v, err, ok = future.All(future.Completed(1, nil), nil).Peek()
	if !ok || !errors.Is(err, future.ErrNilFuture) || !slices.Equal(v, []int{1, 0}) {
		t.Fatalf("All with a nil input: (%v, %v, %v)", v, err, ok)
	}
}

func TestThenAndComposeFailWhenTheFunctionCallsGoexit(t *testing.T) {
	p := future.NewPromise[int]()
	mapped := future.Then(p.Future(), func(int, error) (int, error) { runtime.Goexit(); return 0, nil })
	composed := future.Compose(p.Future(), func(int, error) *future.Future[int] { runtime.Goexit(); return nil })
	exited := make(chan struct{})
	go func() { // the completer; owned by this test, waited for via exited
		defer close(exited)
		p.Succeed(1)
	}()
	<-exited
	wantResult(t, mapped, 0, future.ErrAborted)
	wantResult(t, composed, 0, future.ErrAborted)
}

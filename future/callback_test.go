package future_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/future"
)

// A blocking Get inside a callback must fail at once: the callback runs on the goroutine that completes futures,
// which may be the one that would complete the awaited future (it would wait for itself forever).

func TestInCallbackOutsideCallbacks(t *testing.T) {
	if future.InCallback() {
		t.Fatal("InCallback is true on a test goroutine")
	}
}

func TestInCallbackInsideEveryKindOfCallback(t *testing.T) {
	got := map[string]bool{}
	p := future.NewPromise[int]()
	p.Future().OnComplete(func(int, error) { got["OnComplete before completion"] = future.InCallback() })
	future.Then(p.Future(), func(v int, err error) (int, error) {
		got["Then"] = future.InCallback()
		return v, err
	})
	future.Compose(p.Future(), func(v int, err error) *future.Future[int] {
		got["Compose"] = future.InCallback()
		return future.Completed(v, err)
	})
	p.Succeed(1)
	// Registered after completion: runs at once, on this goroutine, and still as a callback.
	p.Future().OnComplete(func(int, error) { got["OnComplete after completion"] = future.InCallback() })
	future.RunAsCallback(func() { got["RunAsCallback"] = future.InCallback() })

	if len(got) != 5 {
		t.Fatalf("ran %d of 5 callbacks: %v", len(got), got)
	}
	for name, in := range got {
		if !in {
			t.Errorf("%s: InCallback is false inside it", name)
		}
	}
	if future.InCallback() || future.MarkedGoroutines() != 0 {
		t.Fatalf("after the callbacks returned: InCallback %v, marked goroutines %d", future.InCallback(),
			future.MarkedGoroutines())
	}
}

func TestGetInsideCallbackFailsAtOnceOnPendingFuture(t *testing.T) {
	pending := future.NewPromise[int]()
	done := future.Completed(7, nil)
	p := future.NewPromise[int]()
	type result struct {
		v   int
		err error
	}
	var onPending, onDone result
	p.Future().OnComplete(func(int, error) {
		// context.Background: without the check this Get would wait forever.
		onPending.v, onPending.err = pending.Future().Get(context.Background())
		onDone.v, onDone.err = done.Get(context.Background())
	})
	p.Succeed(0)
	if !errors.Is(onPending.err, future.ErrInCallback) {
		t.Fatalf("Get of a pending future inside a callback = (%d, %v), want ErrInCallback", onPending.v, onPending.err)
	}
	if onDone.v != 7 || onDone.err != nil {
		t.Fatalf("Get of a completed future inside a callback = (%d, %v), want (7, nil)", onDone.v, onDone.err)
	}
	if pending.Future().IsDone() {
		t.Fatal("the refused Get completed the future")
	}
}

func TestGoroutineStartedByCallbackMayBlock(t *testing.T) {
	p := future.NewPromise[int]()
	q := future.NewPromise[int]()
	got := make(chan error, 1)
	p.Future().OnComplete(func(int, error) {
		go func() { // owner: this test; ends when q completes
			_, err := q.Future().Get(context.Background())
			got <- err
		}()
	})
	p.Succeed(0)
	awaitParked(t, q.Future(), 1)
	q.Succeed(1)
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Get on a goroutine started by a callback: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Get on a goroutine started by a callback never returned")
	}
}

func TestFollowCallbacksAreNotUserCallbacks(t *testing.T) {
	p := future.NewPromise[int]()
	var plumbing, user bool
	future.Follow(nil, p.Future(), func(int, error) {
		plumbing = future.InCallback()
		// A user callback registered while the completer runs the plumbing's batch still runs as a callback.
		p.Future().OnComplete(func(int, error) { user = future.InCallback() })
	})
	p.Succeed(0)
	if plumbing {
		t.Error("a Follow callback runs as a user callback")
	}
	if !user {
		t.Error("a user callback queued behind a Follow callback does not run as a callback")
	}
}

func TestGetWithNilContext(t *testing.T) {
	p := future.NewPromise[int]()
	go p.Succeed(3) // owner: this test; returns at once

	//lint:ignore SA1012 a nil context is the point of the test
	if v, err := p.Future().Get(nil); v != 3 || err != nil {
		t.Fatalf("Get(nil) = (%d, %v), want (3, nil)", v, err)
	}
}

func TestCallbackPanicLeavesNoMark(t *testing.T) {
	p := future.NewPromise[int]()
	p.Future().OnComplete(func(int, error) { panic("boom") })
	func() {
		defer func() { _ = recover() }()
		p.Succeed(0)
	}()
	if future.InCallback() || future.MarkedGoroutines() != 0 {
		t.Fatalf("after a callback panicked: InCallback %v, marked goroutines %d", future.InCallback(),
			future.MarkedGoroutines())
	}
}

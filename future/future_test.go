package future_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/future"
)

var errBoom = errors.New("boom")

// awaitParked waits until n Get calls are parked on f: an event the test can
// observe, so no sleep stands in for it.
func awaitParked[T any](t *testing.T, f *future.Future[T], n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for future.ParkedGets(f) != n {
		if time.Now().After(deadline) {
			t.Fatalf("parked Get calls: got %d, want %d", future.ParkedGets(f), n)
		}
		runtime.Gosched()
	}
}

// wantResult fails the test unless f is complete with (v, err) per errors.Is.
func wantResult[T comparable](t *testing.T, f *future.Future[T], v T, err error) {
	t.Helper()
	gotV, gotErr, ok := f.Peek()
	if !ok {
		t.Fatalf("future not complete, want (%v, %v)", v, err)
	}
	if gotV != v || !errors.Is(gotErr, err) || (err == nil) != (gotErr == nil) {
		t.Fatalf("result: got (%v, %v), want (%v, %v)", gotV, gotErr, v, err)
	}
}

func TestCompleteExactlyOnceUnderConcurrentCompleters(t *testing.T) {
	const rounds, completers = 300, 16
	for range rounds {
		p := future.NewPromise[int]()
		var (
			start   sync.WaitGroup
			done    sync.WaitGroup
			winners atomic.Int32
			winner  atomic.Int32
		)
		start.Add(1)
		for i := range completers {
			done.Add(1)
			go func() { // owned by this round; waited for by done
				defer done.Done()
				start.Wait()
				var won bool
				if i%2 == 0 {
					won = p.Succeed(i)
				} else {
					won = p.Complete(i, errBoom)
				}
				if won {
					winners.Add(1)
					winner.Store(int32(i))
				}
			}()
		}
		start.Done()
		done.Wait()
		if n := winners.Load(); n != 1 {
			t.Fatalf("winners: got %d, want exactly 1", n)
		}
		w := int(winner.Load())
		var wantErr error
		if w%2 == 1 {
			wantErr = errBoom
		}
		wantResult(t, p.Future(), w, wantErr)
		// Later completions change nothing.
		if p.Succeed(-1) || p.Fail(errors.New("late")) {
			t.Fatal("a completion after the first reported success")
		}
		wantResult(t, p.Future(), w, wantErr)
	}
}

func TestConcurrentWaitersObserveTheSameResult(t *testing.T) {
	const each = 40
	p := future.NewPromise[string]()
	f := p.Future()
	results := make(chan string, 3*each)
	var wg sync.WaitGroup
	for range each {
		wg.Add(3)
		go func() { // Get waiter; owned by this test, waited for by wg
			defer wg.Done()
			v, err := f.Get(context.Background())
			if err != nil {
				t.Errorf("Get: %v", err)
			}
			results <- v
		}()
		go func() { // Done waiter; owned by this test, waited for by wg
			defer wg.Done()
			<-f.Done()
			v, err, ok := f.Peek()
			if !ok || err != nil {
				t.Errorf("Peek after Done: ok=%v err=%v", ok, err)
			}
			results <- v
		}()
		go func() { // registers a callback; owned by this test, waited for by wg via the callback
			f.OnComplete(func(v string, err error) {
				if err != nil {
					t.Errorf("callback: %v", err)
				}
				results <- v
				wg.Done()
			})
		}()
	}
	// Some waiters are parked or registered by now, some are not: both paths run.
	if !p.Succeed("value") {
		t.Fatal("first Succeed lost")
	}
	wg.Wait()
	close(results)
	n := 0
	for v := range results {
		if v != "value" {
			t.Errorf("a waiter observed %q", v)
		}
		n++
	}
	if n != 3*each {
		t.Fatalf("observations: got %d, want %d", n, 3*each)
	}
}

func TestCallbacksRunOnceEachInRegistrationOrder(t *testing.T) {
	p := future.NewPromise[int]()
	f := p.Future()
	var order []int
	record := func(id int) func(int, error) {
		return func(v int, err error) {
			if v != 7 || err != nil {
				t.Errorf("callback %d got (%v, %v)", id, v, err)
			}
			order = append(order, id)
		}
	}
	f.OnComplete(record(1))
	f.OnComplete(record(2))
	f.OnComplete(nil) // ignored
	f.OnComplete(record(3))
	if len(order) != 0 {
		t.Fatalf("callbacks ran before completion: %v", order)
	}

	p.Succeed(7)
	if !slices.Equal(order, []int{1, 2, 3}) {
		t.Fatalf("after Complete returned: %v, want [1 2 3]", order)
	}
	f.OnComplete(record(4))
	if !slices.Equal(order, []int{1, 2, 3, 4}) {
		t.Fatalf("a callback registered after completion must run before OnComplete returns: %v", order)
	}
	f.OnComplete(record(5))
	p.Succeed(8)
	if !slices.Equal(order, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("each callback must run exactly once: %v", order)
	}
}

func TestCallbackRegisteredByACallbackRunsAfterTheQueuedOnes(t *testing.T) {
	p := future.NewPromise[int]()
	f := p.Future()
	var order []string
	f.OnComplete(func(int, error) {
		order = append(order, "a")
		f.OnComplete(func(int, error) { order = append(order, "nested") })
	})
	f.OnComplete(func(int, error) { order = append(order, "b") })
	p.Succeed(1)
	if !slices.Equal(order, []string{"a", "b", "nested"}) {
		t.Fatalf("order: %v", order)
	}
}

// A callback registered from another goroutine while the completer is still
// running earlier callbacks must not overtake them: it is queued and run by the
// completer, after them.
func TestOnCompleteDuringNotificationKeepsRegistrationOrder(t *testing.T) {
	p := future.NewPromise[int]()
	f := p.Future()
	started, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var order []int
	appendOrder := func(id int) {
		mu.Lock()
		order = append(order, id)
		mu.Unlock()
	}
	f.OnComplete(func(int, error) {
		close(started)
		<-release // real callbacks must not block; this one holds the window open
		appendOrder(1)
	})
	completed := make(chan struct{})
	go func() { // the completer; owned by this test, waited for via completed
		defer close(completed)
		p.Succeed(1)
	}()
	<-started
	if !f.IsDone() {
		t.Fatal("the result must be visible while callbacks run")
	}
	if v, err := f.Get(context.Background()); v != 1 || err != nil {
		t.Fatalf("Get while callbacks run: (%v, %v)", v, err)
	}

	f.OnComplete(func(int, error) { appendOrder(2) })
	mu.Lock()
	early := len(order)
	mu.Unlock()
	if early != 0 {
		t.Fatal("the late callback overtook the running one")
	}
	close(release)
	<-completed
	if !slices.Equal(order, []int{1, 2}) {
		t.Fatalf("order: %v, want [1 2]", order)
	}
	ran := false
	f.OnComplete(func(int, error) { ran = true })
	if !ran {
		t.Fatal("once notification is over, callbacks must run at once")
	}
}

func TestGetWithCancelledContextLeavesTheFutureUntouched(t *testing.T) {
	p := future.NewPromise[int]()
	f := p.Future()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if v, err := f.Get(ctx); v != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("Get(cancelled): (%v, %v), want (0, context.Canceled)", v, err)
	}
	if f.IsDone() {
		t.Fatal("a cancelled Get completed the future")
	}

	other := make(chan int)
	go func() { // a second waiter; owned by this test, waited for via other
		v, err := f.Get(context.Background())
		if err != nil {
			t.Errorf("Get: %v", err)
		}
		other <- v
	}()
	awaitParked(t, f, 1)
	if !p.Succeed(42) {
		t.Fatal("the promise was completed by the cancelled Get")
	}
	if v := <-other; v != 42 {
		t.Fatalf("other waiter: got %d", v)
	}
	if v, err := f.Get(ctx); v != 42 || err != nil {
		t.Fatalf("Get after completion: (%v, %v)", v, err)
	}
}

func TestGetCancelledWhileParkedUnparksOnlyItself(t *testing.T) {
	p := future.NewPromise[int]()
	f := p.Future()
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error)
	go func() { // the waiter to cancel; owned by this test, waited for via cancelled
		_, err := f.Get(ctx)
		cancelled <- err
	}()
	patient := make(chan int)
	go func() { // the waiter that stays; owned by this test, waited for via patient
		v, err := f.Get(context.Background())
		if err != nil {
			t.Errorf("Get: %v", err)
		}
		patient <- v
	}()
	awaitParked(t, f, 2)
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Get: %v", err)
	}
	if n := future.ParkedGets(f); n != 1 {
		t.Fatalf("parked after cancel: %d, want 1", n)
	}
	if f.IsDone() {
		t.Fatal("cancelling a Get completed the future")
	}
	p.Succeed(5)
	if v := <-patient; v != 5 {
		t.Fatalf("patient waiter: got %d", v)
	}
}

func TestGetWithDeadline(t *testing.T) {
	p := future.NewPromise[int]()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Future().Get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get past deadline: %v", err)
	}
	if p.Future().IsDone() || future.ParkedGets(p.Future()) != 0 {
		t.Fatal("an expired Get must leave the future pending and unparked")
	}

	// A deadline that is not reached: the completion wins.
	q := future.NewPromise[int]()
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Hour)
	defer cancel2()
	got := make(chan int)
	go func() { // owned by this test, waited for via got
		v, err := q.Future().Get(ctx2)
		if err != nil {
			t.Errorf("Get: %v", err)
		}
		got <- v
	}()
	awaitParked(t, q.Future(), 1)
	q.Succeed(9)
	if v := <-got; v != 9 {
		t.Fatalf("got %d", v)
	}
}

func TestGetOnACompleteFutureIgnoresTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if v, err := future.Completed(3, nil).Get(ctx); v != 3 || err != nil {
		t.Fatalf("got (%v, %v)", v, err)
	}
	if _, err := future.Completed(0, errBoom).Get(ctx); !errors.Is(err, errBoom) {
		t.Fatalf("got %v", err)
	}
}

func TestDoneChannel(t *testing.T) {
	p := future.NewPromise[int]()
	f := p.Future()
	d := f.Done()
	if d != f.Done() {
		t.Fatal("Done must return one channel per pending future")
	}
	select {
	case <-d:
		t.Fatal("Done closed before completion")
	default:
	}
	p.Fail(errBoom)
	<-d // closed by the completion
	<-f.Done()
	wantResult(t, f, 0, errBoom)
	<-future.Completed(1, nil).Done()
}

func TestPeekAndIsDone(t *testing.T) {
	p := future.NewPromise[string]()
	f := p.Future()
	if f != p.Future() {
		t.Fatal("Future must return the same pointer")
	}
	if v, err, ok := f.Peek(); ok || v != "" || err != nil || f.IsDone() {
		t.Fatalf("pending Peek: (%q, %v, %v)", v, err, ok)
	}
	p.Complete("partial", errBoom)
	if !f.IsDone() {
		t.Fatal("IsDone false after Complete")
	}
	wantResult(t, f, "partial", errBoom)
}

func TestFailWithNilErrorSucceedsWithZero(t *testing.T) {
	p := future.NewPromise[int]()
	if !p.Fail(nil) {
		t.Fatal("Fail lost")
	}
	wantResult(t, p.Future(), 0, nil)
}

func TestCompletedRunsCallbacksImmediately(t *testing.T) {
	f := future.Completed("x", errBoom)
	if !f.IsDone() {
		t.Fatal("Completed future not done")
	}
	var got string
	var gotErr error
	f.OnComplete(func(v string, err error) { got, gotErr = v, err })
	if got != "x" || !errors.Is(gotErr, errBoom) {
		t.Fatalf("callback got (%q, %v)", got, gotErr)
	}
}

// When completion happens before the waiter's context ends, Get returns the
// result.
func TestGetPrefersAResultThatArrivedBeforeTheCancellation(t *testing.T) {
	for range 200 {
		p := future.NewPromise[int]()
		f := p.Future()
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan error)
		go func() { // owned by this iteration, waited for via got
			v, err := f.Get(ctx)
			if err == nil && v != 1 {
				t.Errorf("Get returned %d", v)
			}
			got <- err
		}()
		awaitParked(t, f, 1)
		p.Succeed(1)
		cancel() // the waiter is woken twice: by the token and by ctx
		if err := <-got; err != nil {
			t.Fatalf("Get returned %v although the result arrived first", err)
		}
	}
}

// A parked Get woken by its context while the completer detaches it must still
// return the result (the future is complete by the time it looks) and collect
// the wake-up it is owed, so that its pooled waiter goes back clean (putWaiter
// panics otherwise). With one P the order is forced: cancel readies the waiter
// on its ctx case, Succeed then detaches it and sends the token before it runs.
func TestGetWokenByContextDuringCompletionCollectsItsWakeup(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	results := 0
	for range 200 {
		p := future.NewPromise[int]()
		f := p.Future()
		ctx, cancel := context.WithCancel(context.Background())
		type outcome struct {
			v   int
			err error
		}
		got := make(chan outcome)
		go func() { // owned by this iteration, waited for via got
			v, err := f.Get(ctx)
			got <- outcome{v, err}
		}()
		awaitParked(t, f, 1)
		cancel()
		p.Succeed(1)
		switch o := <-got; {
		case o.err == nil && o.v == 1:
			results++
		case errors.Is(o.err, context.Canceled) && o.v == 0:
		default:
			t.Fatalf("Get returned (%v, %v)", o.v, o.err)
		}
	}
	if results == 0 {
		t.Fatal("the woken-by-context-after-detach path never ran")
	}
}

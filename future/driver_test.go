package future_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/future"
)

// testDriver records how the future package calls a Driver; drive, when set, is what Drive does.
type testDriver struct {
	drive      func(ctx context.Context, target future.Completion)
	drives     atomic.Int32
	completed  atomic.Int32
	unattended atomic.Int32

	mu      sync.Mutex
	targets []future.Completion
}

func (d *testDriver) Drive(ctx context.Context, target future.Completion) {
	d.drives.Add(1)
	d.mu.Lock()
	d.targets = append(d.targets, target)
	d.mu.Unlock()
	if d.drive != nil {
		d.drive(ctx, target)
	}
}
func (d *testDriver) Completed()  { d.completed.Add(1) }
func (d *testDriver) Unattended() { d.unattended.Add(1) }

// A Get on a driven future lets the driver work on its goroutine first; a driver that completes the future there
// means Get never parks.
func TestGetDrivesOnItsOwnGoroutine(t *testing.T) {
	p := future.NewPromise[int]()
	d := &testDriver{}
	d.drive = func(context.Context, future.Completion) {
		if n := future.ParkedGets(p.Future()); n != 0 {
			t.Errorf("%d Get parked while driving", n)
		}
		p.Succeed(7)
	}
	p.SetDriver(d)
	v, err := p.Future().Get(context.Background())
	if v != 7 || err != nil {
		t.Fatalf("Get = %v, %v; want 7, nil", v, err)
	}
	if d.drives.Load() != 1 || d.completed.Load() != 1 || d.unattended.Load() != 0 {
		t.Fatalf("drives %d, completed %d, unattended %d; want 1, 1, 0", d.drives.Load(), d.completed.Load(), d.unattended.Load())
	}
	if d.targets[0] != future.Completion(p.Future()) {
		t.Fatal("Drive's target is not the future Get waits for")
	}
	// Complete: no second Drive.
	if v, _ := p.Future().Get(context.Background()); v != 7 || d.drives.Load() != 1 {
		t.Fatalf("second Get = %v after %d drives", v, d.drives.Load())
	}
}

// A driver that cannot help returns at once: Get parks as usual and is woken by the completer.
func TestGetParksWhenTheDriverReturnsEarly(t *testing.T) {
	p := future.NewPromise[int]()
	d := &testDriver{}
	p.SetDriver(d)
	got := make(chan int)
	go func() {
		v, _ := p.Future().Get(context.Background())
		got <- v
	}()
	awaitParked(t, p.Future(), 1)
	p.Succeed(3)
	if v := <-got; v != 3 {
		t.Fatalf("Get = %d; want 3", v)
	}
	if d.drives.Load() != 1 {
		t.Fatalf("drives = %d; want 1", d.drives.Load())
	}
}

// When Get's context ends while the driver works, Get reports the context's error and leaves the future pending.
func TestGetReturnsTheContextErrorWhenItEndsWhileDriving(t *testing.T) {
	p := future.NewPromise[int]()
	d := &testDriver{drive: func(ctx context.Context, _ future.Completion) { <-ctx.Done() }}
	p.SetDriver(d)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Future().Get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get = %v; want DeadlineExceeded", err)
	}
	if p.Future().IsDone() {
		t.Fatal("the future completed")
	}
	if n := future.ParkedGets(p.Future()); n != 0 {
		t.Fatalf("%d Get still parked", n)
	}
}

// A completion by another goroutine tells the driver (Completed), so that a Drive blocked on the future's behalf
// returns and Get sees the result.
func TestCompletedStopsABlockedDrive(t *testing.T) {
	p := future.NewPromise[int]()
	stop := make(chan struct{})
	driving := make(chan struct{})
	d := &completedSignal{stop: stop, driving: driving}
	p.SetDriver(d)
	go func() {
		<-driving
		p.Succeed(9)
	}()
	v, err := p.Future().Get(context.Background())
	if v != 9 || err != nil {
		t.Fatalf("Get = %v, %v", v, err)
	}
}

type completedSignal struct {
	stop, driving chan struct{}
	once          sync.Once
}

func (c *completedSignal) Drive(context.Context, future.Completion) {
	close(c.driving)
	<-c.stop // only Completed ends this wait
}
func (c *completedSignal) Completed()  { c.once.Do(func() { close(c.stop) }) }
func (c *completedSignal) Unattended() {}

// Observers that do not drive (OnComplete, Done) make the driver produce the result itself: Unattended, once per
// future, only while it is pending.
func TestUnattendedOncePerPendingFuture(t *testing.T) {
	p := future.NewPromise[int]()
	d := &testDriver{}
	p.SetDriver(d)
	f := p.Future()
	f.OnComplete(func(int, error) {})
	f.OnComplete(func(int, error) {})
	_ = f.Done()
	if n := d.unattended.Load(); n != 1 {
		t.Fatalf("unattended = %d; want 1", n)
	}

	p2 := future.NewPromise[int]()
	d2 := &testDriver{}
	p2.SetDriver(d2)
	_ = p2.Future().Done()
	if n := d2.unattended.Load(); n != 1 {
		t.Fatalf("Done: unattended = %d; want 1", n)
	}

	p3 := future.NewPromise[int]()
	d3 := &testDriver{}
	p3.SetDriver(d3)
	p3.Succeed(1)
	p3.Future().OnComplete(func(int, error) {})
	_ = p3.Future().Done()
	if n := d3.unattended.Load(); n != 0 {
		t.Fatalf("after completion: unattended = %d; want 0", n)
	}
}

// Then and Compose register on their source without making it unattended, and their result inherits the source's
// driver: a Get on the result drives the source, with the result as the target.
func TestThenAndComposeInheritTheDriver(t *testing.T) {
	p := future.NewPromise[int]()
	d := &testDriver{}
	d.drive = func(_ context.Context, target future.Completion) {
		p.Succeed(2) // the source's work, done on the Get's goroutine, completes the result through Then's callback
		if !target.IsDone() {
			t.Error("Then's result not complete after its source")
		}
	}
	p.SetDriver(d)
	g := future.Then(p.Future(), func(v int, err error) (int, error) { return v * 10, err })
	if n := d.unattended.Load(); n != 0 {
		t.Fatalf("Then made its source unattended (%d)", n)
	}
	v, err := g.Get(context.Background())
	if v != 20 || err != nil {
		t.Fatalf("Get on Then's result = %v, %v", v, err)
	}
	if d.targets[0] != future.Completion(g) {
		t.Fatal("Drive's target is not Then's result")
	}

	q := future.NewPromise[int]()
	dq := &testDriver{}
	q.SetDriver(dq)
	h := future.Compose(q.Future(), func(v int, err error) *future.Future[string] { return future.Completed("x", err) })
	if n := dq.unattended.Load(); n != 0 {
		t.Fatalf("Compose made its source unattended (%d)", n)
	}
	h.OnComplete(func(string, error) {}) // the result's observer does not drive: its driver (the source's) is told
	if n := dq.unattended.Load(); n != 1 {
		t.Fatalf("OnComplete on Compose's result: unattended = %d; want 1", n)
	}
	q.Succeed(1)
	if v, err := h.Get(context.Background()); v != "x" || err != nil {
		t.Fatalf("Get on Compose's result = %v, %v", v, err)
	}
}

// With CancelledBy, the completer owns the cancellation: a Get whose context has that Done channel waits for the
// future alone, so it returns what the completer reports after the context ended.
func TestGetWithTheBoundContextWaitsForTheCompleter(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := future.NewPromise[int]()
	p.CancelledBy(ctx.Done())
	got := make(chan error, 1)
	go func() {
		_, err := p.Future().Get(ctx)
		got <- err
	}()
	awaitParked(t, p.Future(), 1)
	cancel()
	errByCompleter := errors.New("completed by the context's watcher")
	p.Fail(errByCompleter)
	if err := <-got; err != errByCompleter {
		t.Fatalf("Get = %v; want the completer's error", err)
	}
	// A context that already ended is still reported at once.
	q := future.NewPromise[int]()
	q.CancelledBy(ctx.Done())
	if _, err := q.Future().Get(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with an ended context = %v; want Canceled", err)
	}
}

// A Relay forwards a promise's Get to the driver of the step it follows: the step's work runs on the Get's
// goroutine, its callback completes the promise, and the step is not marked unattended.
func TestRelayDrivesTheStepInFlight(t *testing.T) {
	var relay future.Relay
	p := future.NewPromise[string]()
	p.SetDriver(&relay)

	step := future.NewPromise[int]()
	d := &testDriver{}
	d.drive = func(_ context.Context, target future.Completion) {
		if target != future.Completion(p.Future()) {
			t.Error("the step's driver was not given the relayed promise as its target")
		}
		step.Succeed(4) // the step's work, on the Get's goroutine
	}
	step.SetDriver(d)
	future.Follow(&relay, step.Future(), func(v int, err error) { p.Succeed("step " + strconv.Itoa(v)) })
	if n := d.unattended.Load(); n != 0 {
		t.Fatalf("Follow made the step unattended (%d)", n)
	}
	if v, err := p.Future().Get(context.Background()); v != "step 4" || err != nil {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if d.drives.Load() != 1 {
		t.Fatalf("step drives = %d; want 1", d.drives.Load())
	}
	// Completed reaches the step's driver.
	relay.Completed()
	if n := d.completed.Load(); n < 2 { // once by the step's own completion, once relayed
		t.Fatalf("completed = %d; want the relayed call too", n)
	}
}

// Once the relayed promise is observed without a Get (Unattended), the step in flight is told, and later steps
// are registered as unattended too; a nil Relay is plain OnComplete.
func TestRelayUnattendedReachesEveryStep(t *testing.T) {
	var relay future.Relay
	p := future.NewPromise[int]()
	p.SetDriver(&relay)
	first := future.NewPromise[int]()
	d1 := &testDriver{}
	first.SetDriver(d1)
	future.Follow(&relay, first.Future(), func(int, error) {})
	p.Future().OnComplete(func(int, error) {})
	if n := d1.unattended.Load(); n != 1 {
		t.Fatalf("step in flight: unattended = %d; want 1", n)
	}
	second := future.NewPromise[int]()
	d2 := &testDriver{}
	second.SetDriver(d2)
	future.Follow(&relay, second.Future(), func(int, error) {})
	if n := d2.unattended.Load(); n != 1 {
		t.Fatalf("later step: unattended = %d; want 1", n)
	}

	third := future.NewPromise[int]()
	d3 := &testDriver{}
	third.SetDriver(d3)
	got := make(chan int, 1)
	future.Follow(nil, third.Future(), func(v int, _ error) { got <- v })
	if n := d3.unattended.Load(); n != 1 {
		t.Fatalf("Follow(nil): unattended = %d; want 1 (it is OnComplete)", n)
	}
	third.Succeed(3)
	if v := <-got; v != 3 {
		t.Fatalf("callback got %d", v)
	}
}

// A Get that stops driving with the promise still pending parks and never drives again: the step in flight is then
// marked unattended (it was followed while the Get drove, but nobody will read it), and so is every later step.
func TestRelayMarksStepsUnattendedOnceTheGetParks(t *testing.T) {
	var relay future.Relay
	p := future.NewPromise[int]()
	p.SetDriver(&relay)

	second := future.NewPromise[int]()
	d2 := &testDriver{}
	second.SetDriver(d2)
	first := future.NewPromise[int]()
	d1 := &testDriver{}
	d1.drive = func(context.Context, future.Completion) {
		first.Succeed(1) // its callback sends the next step, still pending when this drive ends
	}
	first.SetDriver(d1)
	future.Follow(&relay, first.Future(), func(int, error) {
		future.Follow(&relay, second.Future(), func(v int, _ error) { p.Succeed(v) })
	})
	if d2.unattended.Load() != 0 {
		t.Fatal("a step followed while the Get drives was marked unattended at once")
	}

	got := make(chan int, 1)
	go func() {
		v, _ := p.Future().Get(context.Background())
		got <- v
	}()
	awaitParked(t, p.Future(), 1)
	if n := d2.unattended.Load(); n != 1 {
		t.Fatalf("the pending step when the Get parked: unattended = %d; want 1", n)
	}
	third := future.NewPromise[int]()
	d3 := &testDriver{}
	third.SetDriver(d3)
	future.Follow(&relay, third.Future(), func(int, error) {})
	if n := d3.unattended.Load(); n != 1 {
		t.Fatalf("a step followed after the Get parked: unattended = %d; want 1", n)
	}
	second.Succeed(2)
	if v := <-got; v != 2 {
		t.Fatalf("Get = %d; want 2", v)
	}
}

// A Get that returns because its promise was failed under it (a cancelled call) while a step is still in flight
// leaves that step to its driver: nobody will drive it, and its result must still be read (package rlock gives
// back what a cancelled acquire's attempt was granted).
func TestRelayMarksTheStepUnattendedWhenThePromiseIsFailedUnderTheGet(t *testing.T) {
	var relay future.Relay
	p := future.NewPromise[int]()
	p.SetDriver(&relay)
	step := future.NewPromise[int]()
	d := &testDriver{}
	d.drive = func(context.Context, future.Completion) {
		p.Fail(context.Canceled) // the call's context ended while its attempt was in flight
	}
	step.SetDriver(d)
	future.Follow(&relay, step.Future(), func(int, error) {})

	if _, err := p.Future().Get(context.Background()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get = %v; want the failure", err)
	}
	if n := d.unattended.Load(); n != 1 {
		t.Fatalf("the step still in flight when the Get returned: unattended = %d; want 1", n)
	}
	later := future.NewPromise[int]()
	dl := &testDriver{}
	later.SetDriver(dl)
	future.Follow(&relay, later.Future(), func(int, error) {})
	if n := dl.unattended.Load(); n != 1 {
		t.Fatalf("a step followed afterwards: unattended = %d; want 1", n)
	}
}

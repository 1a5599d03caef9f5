package ctxwatch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// owner is a Set's owner for the tests: its mutex guards the Set, and each end of a watched context is sent on
// ended, after the watch was dropped.
type owner struct {
	mu    sync.Mutex
	set   Set[[]string]
	ended chan end
}

type end struct {
	w       *Watch[[]string]
	err     error
	members []string
}

func newOwner() *owner { return &owner{ended: make(chan end, 16)} }

func (o *owner) ContextEnded(w *Watch[[]string], err error) {
	o.mu.Lock()
	o.set.Drop(w)
	members := w.Members
	o.mu.Unlock()
	o.ended <- end{w: w, err: err, members: members}
}

func (o *owner) join(ctx context.Context, member string) *Watch[[]string] {
	o.mu.Lock()
	defer o.mu.Unlock()
	w := o.set.Join(ctx, o)
	w.Members = append(w.Members, member)
	return w
}

func (o *owner) leave(w *Watch[[]string]) func() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.set.Leave(w)
}

func (o *owner) counts() (watches, calls int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.set.Counts()
}

// waitEnd returns the next end the owner was told of, failing the test if none comes within a minute.
func (o *owner) waitEnd(t *testing.T) end {
	t.Helper()
	select {
	case e := <-o.ended:
		return e
	case <-time.After(time.Minute):
		t.Fatal("the owner was not told that the context ended")
		return end{}
	}
}

// Calls with one context share one watch; the last to leave gets the function that unregisters it, and a context
// that then ends tells the owner nothing.
func TestCallsWithOneContextShareOneWatchUntilTheLastLeaves(t *testing.T) {
	o := newOwner()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := o.join(ctx, "a"), o.join(ctx, "b")
	if a != b {
		t.Fatal("two calls with one context got two watches")
	}
	if w, c := o.counts(); w != 1 || c != 2 {
		t.Fatalf("counts %d watches, %d calls; want 1, 2", w, c)
	}
	if stop := o.leave(a); stop != nil {
		t.Fatal("the first of two calls to leave got the watch's stop")
	}
	stop := o.leave(b)
	if stop == nil {
		t.Fatal("the last call to leave did not get the watch's stop")
	}
	if w, c := o.counts(); w != 0 || c != 0 {
		t.Fatalf("after the last left: %d watches, %d calls; want none", w, c)
	}
	if !stop() {
		t.Fatal("stop did not unregister the AfterFunc")
	}
	cancel()
	select {
	case e := <-o.ended:
		t.Fatalf("the owner was told of an unwatched context's end (%v)", e.err)
	default:
	}
}

// A context that ends tells the owner once, with the context's error and the watch's members; calls made with
// the ended context after that get a new watch, whose end the owner is told of at once.
func TestAnEndedContextTellsItsOwnerOnce(t *testing.T) {
	o := newOwner()
	ctx, cancel := context.WithCancel(context.Background())
	w := o.join(ctx, "a")
	o.join(ctx, "b")
	other, cancelOther := context.WithCancel(context.Background())
	defer cancelOther()
	o.join(other, "c")
	cancel()
	e := o.waitEnd(t)
	if e.w != w || !errors.Is(e.err, context.Canceled) || len(e.members) != 2 {
		t.Fatalf("told %+v; want the watch of a and b, with context.Canceled", e)
	}
	if n, _ := o.counts(); n != 1 {
		t.Fatalf("%d watches after the end; want the other context's only", n)
	}
	later := o.join(ctx, "d")
	if later == w {
		t.Fatal("a call with the ended context joined the dropped watch")
	}
	if e := o.waitEnd(t); e.w != later {
		t.Fatal("the new watch of the ended context did not end at once")
	}
	if stop := o.leave(w); stop != nil {
		t.Fatal("a call leaving a dropped watch got its stop")
	}
}

// Close empties the Set and hands back every watch's stop; the contexts' ends then tell the owner nothing.
func TestCloseHandsBackEveryStop(t *testing.T) {
	o := newOwner()
	var cancels []context.CancelFunc
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		o.join(ctx, "x")
	}
	o.mu.Lock()
	stops := o.set.Close(nil)
	o.mu.Unlock()
	if len(stops) != 3 {
		t.Fatalf("Close returned %d stops; want 3", len(stops))
	}
	for _, stop := range stops {
		if !stop() {
			t.Fatal("a stop did not unregister its AfterFunc")
		}
	}
	for _, cancel := range cancels {
		cancel()
	}
	if w, _ := o.counts(); w != 0 {
		t.Fatalf("%d watches after Close", w)
	}
	select {
	case e := <-o.ended:
		t.Fatalf("the owner was told of a context's end after Close (%v)", e.err)
	default:
	}
}

package timer

import (
	"sync"
	"time"
)

// Group is a set of delayed tasks that their owner must settle when it closes: a retry parked on the wheel stands
// for a caller waiting on its outcome, and a Close that merely stopped the wheel would leave that caller waiting
// forever. Each task runs exactly once: fn(false) on the Timer's worker when its delay ends, or at once on the
// goroutine calling RunNow (the delay was a wait for something that has just happened), or fn(true) on the goroutine
// calling Close, whichever comes first.
//
// A Group does not own its Timer: stopping the Timer does not close the Group. Close the Group before stopping a
// Timer it uses. The zero Group is not usable; create one with NewGroup. Safe for concurrent use.
type Group struct {
	t *Timer

	mu      sync.Mutex // guards the fields below; never held while a task runs
	waiting map[*groupTask]*Timeout
	closed  bool
}

// groupTask is one task of a Group; it is its own timer.Task.
type groupTask struct {
	g  *Group
	fn func(closed bool)
}

// NewGroup returns an empty Group whose tasks ride t.
func NewGroup(t *Timer) *Group { return &Group{t: t, waiting: map[*groupTask]*Timeout{}} }

// After schedules fn(false) to run on the Timer's worker after delay, unless RunNow or Close runs it first (see
// Group). fn must not block (it may run on the worker, see "Tasks must not block" in the package documentation).
// It returns ErrGroupClosed after Close, or the Timer's refusal (ErrStopped, ErrTooManyPending); fn then never runs,
// and the caller settles what it stands for itself. Never blocks.
func (g *Group) After(delay time.Duration, fn func(closed bool)) error {
	gt := &groupTask{g: g, fn: fn}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrGroupClosed
	}
	// Under mu, so that the task cannot run (and find itself missing from waiting) before it is recorded.
	to, err := g.t.NewTimeout(gt, delay)
	if err != nil {
		return err
	}
	g.waiting[gt] = to
	return nil
}

// Run is the Timer's call when gt's delay ends (Task): it runs fn(false) unless RunNow or Close took gt first.
func (gt *groupTask) Run(*Timeout) {
	g := gt.g
	g.mu.Lock()
	_, mine := g.waiting[gt]
	delete(g.waiting, gt)
	g.mu.Unlock()
	if mine {
		gt.fn(false)
	}
}

// RunNow runs every task still waiting, at once, on the calling goroutine, with closed = false; their timeouts are
// cancelled. It blocks while those tasks run. Tasks scheduled while it runs wait for their own delay.
func (g *Group) RunNow() {
	for _, gt := range g.take(false) {
		gt.fn(false)
	}
}

// Close runs every task still waiting, at once, on the calling goroutine, with closed = true, and makes later calls
// to After fail with ErrGroupClosed. It blocks while those tasks run. A task the Timer's worker has already started
// is not waited for. Later calls do nothing.
func (g *Group) Close() {
	for _, gt := range g.take(true) {
		gt.fn(true)
	}
}

// take removes every waiting task, cancelling its timeout, and marks the Group closed when closing.
func (g *Group) take(closing bool) []*groupTask {
	g.mu.Lock()
	if closing {
		g.closed = true
	}
	tasks := make([]*groupTask, 0, len(g.waiting))
	for gt, to := range g.waiting {
		to.Cancel() // whether or not the worker got there first, gt is no longer in waiting: Run will not call fn
		tasks = append(tasks, gt)
	}
	clear(g.waiting)
	g.mu.Unlock()
	return tasks
}

package timer

import "time"

// Observer receives reports from a Timer's worker. Its methods are called on the worker goroutine, between tasks,
// so they must not block (log, count a metric, or hand off). Embed NopObserver in an implementation so that it keeps
// compiling if methods are added.
type Observer interface {
	// SlowTask is called after a task ran for longer than Config.SlowTask. Every other task due in the meantime
	// was delayed by as much: the task should hand its work to another goroutine.
	SlowTask(t *Timeout, took time.Duration)

	// TickLag is called when the worker starts a tick more than Config.SlowTask after the tick ended: the process
	// was starved of CPU, or a task blocked. It is called once per episode (again only after the worker has caught
	// up to within a tick). Timeouts due in the meantime run late, never early.
	TickLag(lag time.Duration)
}

// NopObserver is an Observer that does nothing. Embed it to implement only some methods.
type NopObserver struct{}

// SlowTask does nothing.
func (NopObserver) SlowTask(*Timeout, time.Duration) {}

// TickLag does nothing.
func (NopObserver) TickLag(time.Duration) {}

var _ Observer = NopObserver{}

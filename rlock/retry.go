package rlock

import (
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/timer"
)

// after runs fn(false) on the timer's worker after d, or fn(true) at once if the Client is closed first: a retry
// parked on the timer must not be forgotten when Close stops the timer (its caller would wait forever). It reports
// false when the timer refused the task (fn will not run). fn must not block.
func (c *Client) after(d time.Duration, fn func(closed bool)) bool {
	r := &retry{fn: fn}
	c.retries.mu.Lock()
	if c.retries.closed {
		c.retries.mu.Unlock()
		return false
	}
	tm, err := c.timer.NewTimeout(timer.TaskFunc(func(*timer.Timeout) { c.retries.run(r, false) }), d)
	if err != nil {
		c.retries.mu.Unlock()
		return false
	}
	r.tm = tm
	c.retries.set[r] = struct{}{}
	c.retries.mu.Unlock()
	return true
}

// retry is one task parked by after.
type retry struct {
	fn func(closed bool)
	tm *timer.Timeout
}

// retries are the tasks parked by after, so that Close can run them.
type retries struct {
	mu     sync.Mutex // guards the fields below
	set    map[*retry]struct{}
	closed bool
}

// run runs r once: the first of its timeout and Close wins.
func (rs *retries) run(r *retry, closed bool) {
	rs.mu.Lock()
	_, ok := rs.set[r]
	delete(rs.set, r)
	rs.mu.Unlock()
	if ok {
		r.fn(closed)
	}
}

// close runs every parked task with closed = true, and refuses new ones.
func (rs *retries) close() {
	rs.mu.Lock()
	rs.closed = true
	parked := make([]*retry, 0, len(rs.set))
	for r := range rs.set {
		r.tm.Cancel()
		parked = append(parked, r)
	}
	rs.mu.Unlock()
	for _, r := range parked {
		rs.run(r, true)
	}
}

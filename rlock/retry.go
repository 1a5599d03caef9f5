package rlock

import "time"

// Retries of the package's commands wait on the transport's timer wheel, in the Client's timer.Group (retries), so
// that Close settles every retry still waiting: a retry parked on the wheel stands for a caller waiting on its
// outcome, and the transport's Close stops the wheel, which would drop it.

// after runs fn(false) on the timer's worker after d, or fn(true) at once if the Client is closed first. It reports
// false when the retry cannot wait (the Client is closed, or the timer refused the task): fn will not run, and the
// caller settles what it stands for itself. fn must not block.
func (c *Client) after(d time.Duration, fn func(closed bool)) bool {
	return c.retries.After(d, fn) == nil
}

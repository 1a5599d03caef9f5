package rlock

import (
	"time"

	"github.com/locksmith-go/locksmith/timer"
)

// Short waits. Most of a waiter's bounds are long (its refresh interval, a lock's lease, a caller's deadline),
// and the transport's wheel, whose tick is timer.DefaultTick (10 ms), is precise enough for them. A few are a
// few milliseconds: the gap during which a queue that kept a lock taken for scripts.RunBound leaves it to clients
// that do not queue (scripts.RunGap), a lock about to expire, a wait about to run out. On a 10 ms wheel such a
// bound runs up to a tick late, and meanwhile the lock may stay free with every waiter holding back: under
// continuous contention between processes the queue's gap then lasted 5 to 16 ms instead of about 5, and the waits
// that spanned it made the tail of the wait distribution. So a wait shorter than one rotation of a 1 ms wheel is
// armed on such a wheel, the client's own. Its worker starts with the first short wait, sleeps while none is
// pending, and stops in Close.
const (
	shortWaitTick   = time.Millisecond
	shortWaitBucket = 64
	// shortWaitMax bounds the waits armed on the short-wait wheel: one rotation of it, so that each goes straight
	// into its bucket.
	shortWaitMax = shortWaitTick * shortWaitBucket
)

// newShortWaitTimer creates the short-wait wheel. It starts no goroutine until a wait is armed on it.
func newShortWaitTimer() *timer.Timer {
	return timer.New(timer.Config{Tick: shortWaitTick, WheelSize: shortWaitBucket})
}

// waitTimer returns the wheel a wait of d is armed on.
func (c *Client) waitTimer(d time.Duration) *timer.Timer {
	if d < shortWaitMax {
		return c.short
	}
	return c.timer
}

// stopShortWaits stops the short-wait wheel and waits for its worker to exit. Close calls it once every waiter has
// been failed: a wait still pending belongs to a call that is over, and is dropped.
func (c *Client) stopShortWaits() { _, _ = c.short.Stop() }

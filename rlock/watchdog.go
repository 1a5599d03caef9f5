package rlock

import (
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/timer"
)

// watchdog renews the leases of the locks held without an explicit lease.
//
// Each such lock has one timeout on the client's timer (its hold is the task); when it fires, the hold joins the
// pending batch. A batch is sent as one EVALSHA of renewSrc as soon as it holds RenewBatchSize locks, or when its
// oldest renewal has waited flushDelay (a thirtieth of the lease) for company. Renewals that fall due together
// thus share a call, and because every lock of a batch is rescheduled from the same confirmation, a batch stays a
// cohort that falls due together again: 10,000 locks renewed every second go out as 100 full batches per second.
//
// Per-key results: a lock the server reports gone is lost (its held context is cancelled with ErrLockLost). A
// batch that fails on the transport changes nothing by itself: its locks are retried after RetryDelay, and each
// one's held context is cancelled with ErrLeaseExpired when its lease ends without a confirmed renewal. While a
// batch is pending or in flight, one guard timeout per batch (not per lock: a renewal then costs one timeout,
// re-armed on confirmation) watches the earliest lease end among its locks, so that a lock whose renewal is stuck
// — the server unreachable, the transport still waiting for its response timeout — is declared expired at its
// lease end, not later.
type watchdog struct {
	c *Client

	mu      sync.Mutex  // guards the fields below
	cur     *renewBatch // the batch being filled, nil when none
	stopped bool
}

// renewBatch is one renewal EVALSHA: its locks, and the timeouts that send it (flush) and guard it.
type renewBatch struct {
	w     *watchdog
	holds []*hold

	mu       sync.Mutex     // guards the fields below
	flush    *timer.Timeout // sends a partial batch after flushDelay (while it is w.cur)
	guard    *timer.Timeout // fires at the earliest lease end among holds still renewing
	firstEnd time.Duration  // the earliest expireAt among the holds that joined while pending
	finished bool           // the reply was applied
}

func (w *watchdog) init(c *Client) { w.c = c }

// add queues h for renewal; end is h's expireAt. Called from h's timer task, without the shard mutex.
func (w *watchdog) add(h *hold, end time.Duration) {
	c := w.c
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	b := w.cur
	if b == nil {
		b = &renewBatch{w: w, holds: make([]*hold, 0, c.cfg.RenewBatchSize), firstEnd: end}
		w.cur = b
		b.mu.Lock()
		if tm, err := c.timer.NewTimeout(timer.TaskFunc(b.onFlush), c.cfg.flushDelay); err == nil {
			b.flush = tm
		}
		if tm, err := c.timer.NewTimeout(b, end-c.now()); err == nil {
			b.guard = tm
		}
		b.mu.Unlock()
	}
	if end < b.firstEnd {
		// A renewal retried late in its lease: guard its end, not only the first one's.
		b.mu.Lock()
		b.firstEnd = end
		if b.guard != nil && b.guard.Cancel() {
			b.guard = nil
			if tm, err := c.timer.NewTimeout(b, end-c.now()); err == nil {
				b.guard = tm
			}
		}
		b.mu.Unlock()
	}
	b.holds = append(b.holds, h)
	full := len(b.holds) >= c.cfg.RenewBatchSize
	if full {
		w.cur = nil
	}
	w.mu.Unlock()
	if full {
		b.send()
	}
}

// onFlush sends a partial batch whose oldest renewal waited flushDelay. It runs on the timer's worker.
func (b *renewBatch) onFlush(*timer.Timeout) {
	w := b.w
	w.mu.Lock()
	if w.cur != b {
		w.mu.Unlock()
		return // sent when it filled up
	}
	w.cur = nil
	w.mu.Unlock()
	b.send()
}

// stop drops the pending batch (Close). Batches in flight complete against holds that Close already removed.
func (w *watchdog) stop() {
	w.mu.Lock()
	w.stopped = true
	b := w.cur
	w.cur = nil
	w.mu.Unlock()
	if b != nil {
		b.mu.Lock()
		b.finished = true
		b.stopTimersLocked()
		b.mu.Unlock()
	}
}

func (b *renewBatch) stopTimersLocked() {
	if b.flush != nil {
		b.flush.Cancel()
		b.flush = nil
	}
	if b.guard != nil {
		b.guard.Cancel()
		b.guard = nil
	}
}

// send runs the batch: one EVALSHA. Holds released since they were queued are renewed all the same when they are
// still in the batch: the script only extends a lock its owner still holds, and their results are ignored.
func (b *renewBatch) send() {
	c := b.w.c
	b.mu.Lock()
	if b.flush != nil {
		b.flush.Cancel()
		b.flush = nil
	}
	b.mu.Unlock()
	keys := make([]string, len(b.holds))
	args := make([]string, 1+len(b.holds))
	args[0] = c.cfg.watchdogMillis
	for i, h := range b.holds {
		keys[i] = h.name
		args[i+1] = h.owner
	}
	sentAt := c.now()
	c.conn.Eval(background, renewScript, keys, args...).OnComplete(func(v resp.Value, err error) {
		b.done(sentAt, v, err)
	})
}

// Run is the batch's guard: the earliest lease end among its locks has come and the renewal is not confirmed.
// Each lock past its end expires; the guard re-arms for the others. It runs on the timer's worker.
func (b *renewBatch) Run(t *timer.Timeout) {
	c := b.w.c
	b.mu.Lock()
	if b.finished || b.guard != t {
		b.mu.Unlock()
		return
	}
	b.guard = nil
	b.mu.Unlock()

	now := c.now()
	next := time.Duration(-1)
	var expired []*hold
	for _, h := range b.holds {
		sh := c.shard(h.name)
		sh.mu.Lock()
		if h.state == holdHeld && h.renewing {
			if end := h.expireAt(); now >= end {
				h.renewing = false
				c.dropLocked(sh, h)
				expired = append(expired, h)
			} else if next < 0 || end < next {
				next = end
			}
		}
		sh.mu.Unlock()
	}
	for _, h := range expired {
		c.lost(h, ErrLeaseExpired)
	}
	if next < 0 {
		return
	}
	b.mu.Lock()
	if !b.finished {
		if tm, err := c.timer.NewTimeout(b, next-c.now()); err == nil {
			b.guard = tm
		}
	}
	b.mu.Unlock()
}

// done applies a batch's per-key results. It runs on the event loop that received the reply.
func (b *renewBatch) done(sentAt time.Duration, v resp.Value, err error) {
	c := b.w.c
	b.mu.Lock()
	b.finished = true
	b.stopTimersLocked()
	b.mu.Unlock()

	var res string
	if err == nil {
		res, err = v.AsString()
		if err == nil && len(res) != len(b.holds) {
			err = &resp.TypeError{Want: "one result per key", Got: v.Type}
		}
	}
	ev := RenewalEvent{Locks: len(b.holds), Took: c.now() - sentAt, Err: err}
	var lost, expired []*hold
	for i, h := range b.holds {
		sh := c.shard(h.name)
		sh.mu.Lock()
		if h.state != holdHeld || !h.renewing {
			sh.mu.Unlock()
			continue
		}
		h.renewing = false
		h.stopTimerLocked()
		switch {
		case err != nil:
			// Retry after RetryDelay, unless the lease ends first.
			now := c.now()
			if now >= h.expireAt() {
				c.dropLocked(sh, h)
				expired = append(expired, h)
				break
			}
			if tm, terr := c.timer.NewTimeout(h, min(c.cfg.RetryDelay, h.expireAt()-now)); terr == nil {
				h.tm = tm
			}
		case res[i] == '1':
			ev.Renewed++
			h.deadline = sentAt + c.cfg.WatchdogTimeout
			h.lease = c.cfg.WatchdogTimeout
			if aerr := h.armLocked(); aerr != nil {
				c.log.Warn("rlock: cannot schedule the next renewal", "lock", h.name, "err", aerr)
			}
		default:
			ev.Gone++
			c.dropLocked(sh, h)
			lost = append(lost, h)
		}
		sh.mu.Unlock()
	}
	c.obs.RenewalBatch(ev)
	if err != nil {
		c.log.Warn("rlock: renewal batch failed; retrying until the leases end", "locks", len(b.holds), "err", err)
	}
	for _, h := range lost {
		c.lost(h, ErrLockLost)
	}
	for _, h := range expired {
		c.lost(h, ErrLeaseExpired)
	}
}

var _ timer.Task = (*renewBatch)(nil)

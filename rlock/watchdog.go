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
// one's held context is cancelled with ErrLeaseExpired when its lease ends without a confirmed renewal (the hold's
// timer guards that while the renewal is in flight).
type watchdog struct {
	c *Client

	mu      sync.Mutex // guards the fields below
	pending []*hold
	flush   *timer.Timeout // armed while pending is not empty
	stopped bool
}

func (w *watchdog) init(c *Client) { w.c = c }

// add queues h for renewal. Called from h's timer task, without the shard mutex.
func (w *watchdog) add(h *hold) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.pending = append(w.pending, h)
	if len(w.pending) >= w.c.cfg.RenewBatchSize {
		batch := w.takeLocked()
		w.mu.Unlock()
		w.send(batch)
		return
	}
	if w.flush == nil {
		tm, err := w.c.timer.NewTimeout(timer.TaskFunc(w.onFlush), w.c.cfg.flushDelay)
		if err == nil {
			w.flush = tm
		}
	}
	w.mu.Unlock()
}

// onFlush sends a partial batch whose oldest renewal waited flushDelay. It runs on the timer's worker.
func (w *watchdog) onFlush(t *timer.Timeout) {
	w.mu.Lock()
	if w.flush != t {
		w.mu.Unlock()
		return
	}
	w.flush = nil
	batch := w.takeLocked()
	w.mu.Unlock()
	w.send(batch)
}

func (w *watchdog) takeLocked() []*hold {
	batch := w.pending
	w.pending = make([]*hold, 0, w.c.cfg.RenewBatchSize)
	if w.flush != nil {
		w.flush.Cancel()
		w.flush = nil
	}
	return batch
}

// stop drops the pending renewals (Close).
func (w *watchdog) stop() {
	w.mu.Lock()
	w.stopped = true
	w.pending = nil
	if w.flush != nil {
		w.flush.Cancel()
		w.flush = nil
	}
	w.mu.Unlock()
}

// send runs one renewal batch. Holds released since they were queued are renewed all the same when they are
// still in the batch: the script only extends a lock its owner still holds, and their results are ignored.
func (w *watchdog) send(batch []*hold) {
	if len(batch) == 0 {
		return
	}
	c := w.c
	keys := make([]string, len(batch))
	args := make([]string, 1+len(batch))
	args[0] = c.cfg.watchdogMillis
	for i, h := range batch {
		keys[i] = h.name
		args[i+1] = h.owner
	}
	sentAt := c.now()
	c.conn.Eval(background, renewScript, keys, args...).OnComplete(func(v resp.Value, err error) {
		w.done(batch, sentAt, v, err)
	})
}

// done applies a batch's per-key results. It runs on the event loop that received the reply.
func (w *watchdog) done(batch []*hold, sentAt time.Duration, v resp.Value, err error) {
	c := w.c
	var res string
	if err == nil {
		res, err = v.AsString()
		if err == nil && len(res) != len(batch) {
			err = &resp.TypeError{Want: "one result per key", Got: v.Type}
		}
	}
	ev := RenewalEvent{Locks: len(batch), Took: c.now() - sentAt, Err: err}
	var lost []*hold
	for i, h := range batch {
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
			// Retry soon; the lease's end is guarded by the hold's timer (armLocked takes the earlier of the two).
			if c.now() >= h.expireAt() {
				c.dropLocked(sh, h)
				lost = append(lost, h)
				sh.mu.Unlock()
				continue
			}
			tm, terr := c.timer.NewTimeout(h, min(c.cfg.RetryDelay, h.expireAt()-c.now()))
			if terr == nil {
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
		c.log.Warn("rlock: renewal batch failed; retrying until the leases end", "locks", len(batch), "err", err)
	}
	for _, h := range lost {
		if err != nil {
			c.lost(h, ErrLeaseExpired)
		} else {
			c.lost(h, ErrLockLost)
		}
	}
}

package rlock

import (
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/timer"
)

// famWatchdog renews the family's watchdog holds (fair, fenced, read and write holds) the way the plain lock's
// watchdog renews plain locks: each hold has one timeout; when it fires the hold joins the pending batch, sent as
// one EVALSHA of famRenewSrc once RenewBatchSize holds are pending or when the oldest has waited a thirtieth of the
// lease. A hold reported gone is lost (ErrLockLost); a batch that fails on the transport is retried after
// RetryDelay, and each hold's lease ends locally (ErrLeaseExpired) if no renewal is confirmed in time.
//
// It is a separate batcher from the plain lock's because its script renews the read-write lock's per-hold keys
// too; both run on the same timer. The two could become one batcher keyed by script.
type famWatchdog struct {
	f *family

	mu      sync.Mutex // guards the fields below
	pending []*famHold
	flush   *timer.Timeout
	stopped bool
}

// famFlushDelay is how long a partial batch may wait for company: a thirtieth of the lease, between 1 ms and 1 s,
// as for the plain lock's watchdog.
func (w *famWatchdog) flushDelay() time.Duration {
	return min(max(w.f.c.cfg.WatchdogTimeout/30, time.Millisecond), time.Second)
}

func (w *famWatchdog) add(h *famHold) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.pending = append(w.pending, h)
	if len(w.pending) >= w.f.c.cfg.RenewBatchSize {
		batch := w.takeLocked()
		w.mu.Unlock()
		w.send(batch)
		return
	}
	if w.flush == nil {
		if tm, err := w.f.c.timer.NewTimeout(timer.TaskFunc(w.onFlush), w.flushDelay()); err == nil {
			w.flush = tm
		}
	}
	w.mu.Unlock()
}

func (w *famWatchdog) onFlush(t *timer.Timeout) {
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

func (w *famWatchdog) takeLocked() []*famHold {
	batch := w.pending
	w.pending = nil
	if w.flush != nil {
		w.flush.Cancel()
		w.flush = nil
	}
	return batch
}

func (w *famWatchdog) stop() {
	w.mu.Lock()
	w.stopped = true
	w.pending = nil
	if w.flush != nil {
		w.flush.Cancel()
		w.flush = nil
	}
	w.mu.Unlock()
}

func (w *famWatchdog) send(batch []*famHold) {
	if len(batch) == 0 {
		return
	}
	c := w.f.c
	keys := make([]string, len(batch))
	args := make([]string, 1+2*len(batch))
	args[0] = famMillis(c.cfg.WatchdogTimeout)
	for i, h := range batch {
		keys[i] = h.key.name
		args[1+2*i] = h.field
		args[2+2*i] = h.prefix
	}
	sentAt := c.now()
	c.conn.Eval(background, famRenewScript, keys, args...).OnComplete(func(v resp.Value, err error) {
		w.done(batch, sentAt, v, err)
	})
}

// done applies a batch's per-entry results. It runs on the event loop that received the reply.
func (w *famWatchdog) done(batch []*famHold, sentAt time.Duration, v resp.Value, err error) {
	f := w.f
	c := f.c
	var res string
	if err == nil {
		res, err = v.AsString()
		if err == nil && len(res) != len(batch) {
			err = &resp.TypeError{Want: "one result per entry", Got: v.Type}
		}
	}
	ev := RenewalEvent{Locks: len(batch), Took: c.now() - sentAt, Err: err}
	var lost []*famHold
	f.mu.Lock()
	for i, h := range batch {
		if h.state != famHoldHeld || !h.renewing {
			continue
		}
		h.renewing = false
		h.stopTimerLocked()
		switch {
		case err != nil:
			if c.now() >= h.expireAt() {
				f.dropLocked(h)
				lost = append(lost, h)
				continue
			}
			if tm, terr := c.timer.NewTimeout(h, min(c.cfg.RetryDelay, h.expireAt()-c.now())); terr == nil {
				h.tm = tm
			}
		case res[i] == '1':
			ev.Renewed++
			h.lease = c.cfg.WatchdogTimeout
			h.deadline = max(h.deadline, sentAt+c.cfg.WatchdogTimeout)
			if aerr := h.armLocked(); aerr != nil {
				c.log.Warn("rlock: cannot schedule the next renewal", "lock", h.key.name, "err", aerr)
			}
		default:
			ev.Gone++
			f.dropLocked(h)
			lost = append(lost, h)
		}
	}
	f.mu.Unlock()
	c.obs.RenewalBatch(ev)
	if err != nil && !f.isClosed() {
		c.log.Warn("rlock: renewal batch failed; retrying until the leases end", "locks", len(batch), "err", err)
	}
	for _, h := range lost {
		if err != nil {
			f.lost(h, ErrLeaseExpired)
		} else {
			f.lost(h, ErrLockLost)
		}
	}
}

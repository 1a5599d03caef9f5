package rlock

import (
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/timer"
)

// watchdog renews the leases of the locks held without an explicit lease, every kind of lock alike (plain, fair,
// fenced, read and write holds).
//
// Each such lock has one timeout on the client's timer (its hold is the task); when it fires, the hold joins the
// pending batch of its batch key. A batch is sent as one EVALSHA as soon as it holds RenewBatchSize locks, or when
// its oldest renewal has waited flushDelay (a thirtieth of the lease) for company. Renewals that fall due together
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

	mu      sync.Mutex               // guards the fields below
	open    map[batchKey]*renewBatch // the batches being filled, one per key
	stopped bool
}

// batchKey says which renewals may share one EVALSHA: those of one renewal script (the plain layout's or the
// read-write lock's) whose keys live on one server. On a Redis Cluster a script's keys must share a hash slot, so
// there the slot is part of the key (Redisson batches per slot too); elsewhere it is noSlot and every renewal of a
// script can go into one call.
type batchKey struct {
	script *conn.Script
	slot   int
}

// noSlot is the slot of every batch key when the Client does not talk to a cluster.
const noSlot = -1

// batchKeyOf returns the batch a hold's renewal joins.
func (c *Client) batchKeyOf(h *hold) batchKey {
	k := batchKey{script: renewScript, slot: noSlot}
	if h.kind.rwLayout() {
		k.script = rwRenewScript
	}
	if c.cluster {
		k.slot = conn.KeySlot(h.name)
	}
	return k
}

// renewBatch is one renewal EVALSHA: its locks, and the timeouts that send it (flush) and guard it.
type renewBatch struct {
	w     *watchdog
	key   batchKey
	holds []*hold

	mu       sync.Mutex     // guards the fields below
	flush    *timer.Timeout // sends a partial batch after flushDelay (while it is open)
	guard    *timer.Timeout // fires at the earliest lease end among holds still renewing
	firstEnd time.Duration  // the earliest expireAt among the holds that joined while pending
	finished bool           // the reply was applied
}

func (w *watchdog) init(c *Client) {
	w.c = c
	w.open = make(map[batchKey]*renewBatch)
}

// add queues h for renewal; end is h's expireAt. Called from h's timer task, without the shard mutex.
func (w *watchdog) add(h *hold, end time.Duration) {
	c := w.c
	key := c.batchKeyOf(h)
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	b := w.open[key]
	if b == nil {
		b = &renewBatch{w: w, key: key, holds: make([]*hold, 0, c.cfg.RenewBatchSize), firstEnd: end}
		w.open[key] = b
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
		b.guardEarlier(end)
	}
	b.holds = append(b.holds, h)
	full := len(b.holds) >= c.cfg.RenewBatchSize
	if full {
		delete(w.open, key)
	}
	w.mu.Unlock()
	if full {
		b.send()
	}
}

// guardEarlier moves the batch's guard to end when that is earlier than the end it guards.
func (b *renewBatch) guardEarlier(end time.Duration) {
	c := b.w.c
	b.mu.Lock()
	defer b.mu.Unlock()
	if end >= b.firstEnd {
		return
	}
	b.firstEnd = end
	if b.guard != nil && b.guard.Cancel() {
		b.guard = nil
		if tm, err := c.timer.NewTimeout(b, end-c.now()); err == nil {
			b.guard = tm
		}
	}
}

// onFlush sends a partial batch whose oldest renewal waited flushDelay. It runs on the timer's worker.
func (b *renewBatch) onFlush(*timer.Timeout) {
	w := b.w
	w.mu.Lock()
	if w.open[b.key] != b {
		w.mu.Unlock()
		return // sent when it filled up
	}
	delete(w.open, b.key)
	w.mu.Unlock()
	b.send()
}

// stop drops the pending batches (Close). Batches in flight complete against holds that Close already removed.
func (w *watchdog) stop() {
	w.mu.Lock()
	w.stopped = true
	open := w.open
	w.open = nil
	w.mu.Unlock()
	for _, b := range open {
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

// send runs the batch: one EVALSHA. A hold whose release started since it was queued leaves the batch here (its
// renewal was cancelled at the start of its Unlock, Redisson #7272); a batch left empty sends nothing.
func (b *renewBatch) send() {
	c := b.w.c
	b.mu.Lock()
	if b.flush != nil {
		b.flush.Cancel()
		b.flush = nil
	}
	b.mu.Unlock()
	// Taken before the command is built: a renewal may run on the server from now on.
	sentAt := c.now()
	live := b.holds[:0]
	earliest := time.Duration(-1)
	for _, h := range b.holds {
		sh := c.shard(h.name)
		sh.mu.Lock()
		ok := h.state == holdHeld && h.renewing
		if ok {
			h.renewalSentLocked(sentAt)
			if end := h.expireAt(); earliest < 0 || end < earliest {
				earliest = end
			}
		}
		sh.mu.Unlock()
		if ok {
			live = append(live, h)
		}
	}
	clear(b.holds[len(live):])
	b.holds = live
	if len(live) == 0 {
		b.mu.Lock()
		b.finished = true
		b.stopTimersLocked()
		b.mu.Unlock()
		return
	}
	b.guardEarlier(earliest)
	keys, args := b.renewArgs()
	c.conn.Eval(background, b.key.script, keys, args...).OnComplete(func(v resp.Value, err error) {
		b.done(sentAt, v, err)
	})
}

// renewArgs builds the renewal script's keys and arguments: one key per lock, then the lease and, per lock, the
// hash field that must still be there (plain layout: the owner; read-write layout: the field and, for read holds,
// the owner's hold-key prefix, whose keys are renewed too).
func (b *renewBatch) renewArgs() (keys, args []string) {
	c := b.w.c
	keys = make([]string, len(b.holds))
	if b.key.script == rwRenewScript {
		args = make([]string, 1+2*len(b.holds))
		args[0] = c.cfg.watchdogMillis
		for i, h := range b.holds {
			keys[i] = h.name
			args[1+2*i] = h.kind.field(h.owner)
			if h.kind == kindRead {
				args[2+2*i] = rwHoldPrefix(h.name, h.owner)
			}
		}
		return keys, args
	}
	args = make([]string, 1+len(b.holds))
	args[0] = c.cfg.watchdogMillis
	for i, h := range b.holds {
		keys[i] = h.name
		args[i+1] = h.owner
	}
	return keys, args
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
			h.lease = c.cfg.WatchdogTimeout
			h.confirmLocked(localEnd(sentAt, c.cfg.WatchdogTimeout), sentAt, h.renewalGrows())
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
	if err != nil && !c.closed.Load() {
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

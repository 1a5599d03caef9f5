package workload

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// sharedKey is the state W2 and W4 keep for one contended lock. counter is
// incremented under the distributed lock by a separate load and store (atomic
// accesses, so that the race detector stays quiet, but not an atomic
// increment): when two holders overlap, increments get lost and the final
// count falls short of the acquisitions.
type sharedKey struct {
	name         string
	holders      atomic.Int32 // goroutines inside the critical section now
	last         atomic.Int32 // previous holder's index, -1 before the first
	acquisitions atomic.Int64 // every acquisition, in and out of the window
	counter      atomic.Int64 // incremented under the lock by a load and a store: not atomically
	_            [32]byte
}

// contender is one W2/W4 goroutine's state.
type contender struct {
	since atomic.Int64 // unix nanos when it started to want the lock; 0 = not waiting
	acq   atomic.Int64 // acquisitions in the window
	reacq atomic.Int64 // of which the key's previous holder was this goroutine
	_     [40]byte
}

// contention is what W2 and W4 share: keys, workers, counters.
type contention struct {
	lib        Library
	spec       Spec
	keys       []sharedKey
	workers    []contender
	w          *window
	lat        *Latencies
	errs       errorLog
	gaveUps    atomic.Int64
	violations atomic.Int64
}

func newContention(lib Library, spec Spec, keys int) *contention {
	c := &contention{
		lib: lib, spec: spec,
		keys:    make([]sharedKey, max(keys, 1)),
		workers: make([]contender, max(spec.Goroutines, 1)),
		w:       newWindow(lib),
		lat:     NewLatencies(shards(spec.Goroutines)),
	}
	for i := range c.keys {
		c.keys[i].name = spec.key(i)
		c.keys[i].last.Store(-1)
	}
	return c
}

// acquire blocks until goroutine i holds k, calling Lock again after a
// give-up or an error. It returns the wait (from the first call) and false
// when ctx ended first.
func (c *contention) acquire(ctx context.Context, i int, k *sharedKey) (Held, time.Duration, bool) {
	ws := &c.workers[i]
	t0 := time.Now()
	ws.since.Store(t0.UnixNano())
	defer ws.since.Store(0)
	for {
		h, err := c.lib.Lock(ctx, k.name)
		if err == nil {
			return h, time.Since(t0), true
		}
		switch {
		case ctx.Err() != nil:
			return nil, 0, false
		case errors.Is(err, ErrGaveUp):
			c.gaveUps.Add(1)
		default:
			c.errs.add(err)
			sleepCtx(ctx, errorBackoff)
		}
	}
}

// critical is the critical section: overlap check, re-acquisition check and
// the non-atomic increment. It reports whether the previous holder was i.
func (c *contention) critical(i int, k *sharedKey) (reacq bool) {
	if k.holders.Add(1) != 1 {
		c.violations.Add(1)
	}
	reacq = k.last.Swap(int32(i)) == int32(i)
	k.counter.Store(k.counter.Load() + 1)
	k.acquisitions.Add(1)
	k.holders.Add(-1)
	return reacq
}

// run runs body for every worker and the warm-up and window around them;
// it returns once the window has closed, the workers were told to stop and
// waited for (up to StopGrace).
func (c *contention) run(ctx context.Context, win Window, r *Record, body func(ctx context.Context, i int)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	smp := startSampler()
	var wg sync.WaitGroup
	for i := range c.workers {
		wg.Add(1)
		// Owned by contention.run: ends when ctx is cancelled after the
		// window; waited for (up to StopGrace) below.
		go func(i int) {
			defer wg.Done()
			body(ctx, i)
		}(i)
	}
	var werr error
	if sleepCtx(ctx, c.spec.Warmup) {
		if werr = c.w.open(win); werr == nil {
			sleepCtx(ctx, c.spec.Duration)
		}
	}
	if werr == nil {
		c.w.shut()
		r.Waiting, r.WaitingOldestMs = c.waiting()
		werr = c.w.signalEnd(win)
	}
	cancel()
	finished := waitGroupFor(&wg, c.spec.StopGrace)
	if !finished {
		r.Abandoned = c.busy()
	}
	smp.finish(r)
	c.summarize(r, finished)
	return werr
}

// waiting counts workers that have wanted the lock for longer than StallAge.
func (c *contention) waiting() (n int, oldestMs float64) {
	now := time.Now().UnixNano()
	for i := range c.workers {
		s := c.workers[i].since.Load()
		if s == 0 {
			continue
		}
		if d := time.Duration(now - s); d > c.spec.StallAge {
			n++
			oldestMs = max(oldestMs, float64(d)/1e6)
		}
	}
	return n, oldestMs
}

func (c *contention) busy() int {
	n := 0
	for i := range c.workers {
		if c.workers[i].since.Load() != 0 {
			n++
		}
	}
	return n
}

// summarize fills the record. The counters are compared only when every
// worker has returned (finished): a stuck worker could still be inside a
// critical section.
func (c *contention) summarize(r *Record, finished bool) {
	per := make([]int64, len(c.workers))
	var acq, reacq int64
	for i := range c.workers {
		per[i] = c.workers[i].acq.Load()
		acq += per[i]
		reacq += c.workers[i].reacq.Load()
	}
	r.Jain = Jain(per)
	r.MinPerG, r.MaxPerG = MinMax(per)
	if acq > 0 {
		r.ReacqPct = 100 * float64(reacq) / float64(acq)
	}
	r.Violations = c.violations.Load()
	if finished {
		for i := range c.keys {
			k := &c.keys[i]
			r.CounterExpected += k.acquisitions.Load()
			got := k.counter.Load()
			r.CounterGot += got
			if got != k.acquisitions.Load() {
				r.Violations++
			}
		}
	}
	c.lat.Summarize(r)
	c.errs.fill(r)
	r.GaveUps = c.gaveUps.Load()
	c.w.fill(r, acq)
}

// runContended is W2: G goroutines on K keys (goroutine i uses key i%K) with
// blocking acquire and no think time. One op is one acquisition; its latency
// is the wait from starting to want the lock until holding it.
func runContended(ctx context.Context, lib Library, spec Spec, win Window, r *Record) error {
	c := newContention(lib, spec, spec.Keys)
	return c.run(ctx, win, r, func(ctx context.Context, i int) {
		k := &c.keys[i%len(c.keys)]
		ws := &c.workers[i]
		for ctx.Err() == nil {
			h, wait, ok := c.acquire(ctx, i, k)
			if !ok {
				return
			}
			reacq := c.critical(i, k)
			if c.w.measuring() {
				c.lat.Record(i, wait)
				ws.acq.Add(1)
				if reacq {
					ws.reacq.Add(1)
				}
			}
			if err := h.Unlock(context.Background()); err != nil {
				c.errs.add(err)
			}
		}
	})
}

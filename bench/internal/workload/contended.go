package workload

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// sharedKey is the state W2 and W4 keep for one contended lock. counter is
// incremented under the distributed lock by a separate load and store (atomic
// accesses, so that the race detector stays quiet, but not an atomic
// increment), the load on entering the critical section and the store on
// leaving it: when two holders overlap, increments get lost and the final
// count falls short of the acquisitions.
type sharedKey struct {
	name         string
	check        checkKeys    // the server-side check's keys
	holders      atomic.Int32 // goroutines inside the critical section now
	last         atomic.Int32 // previous holder's index, -1 before the first
	acquisitions atomic.Int64 // every acquisition, in and out of the window
	counter      atomic.Int64 // incremented under the lock by a load and a store: not atomically
	checked      atomic.Int64 // acquisitions whose server-side check completed, in and out of the window
	_            [32]byte
}

// contender is one W2/W4 goroutine's state.
type contender struct {
	since  atomic.Int64 // unix nanos when it started to want the lock; 0 = not waiting
	acq    atomic.Int64 // acquisitions in the window
	reacq  atomic.Int64 // of which the key's previous holder was this goroutine
	ck     *checker     // its connection for the server-side check; nil without one
	lk     Locker       // its key's lock, bound on first use (Binder)
	grants []int64      // grant sequence numbers of its acquisitions in the window (spread cases)
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
	violations atomic.Int64 // in-process overlaps
	markers    atomic.Int64 // server-side owner marker found taken or changed
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
		c.keys[i].check = newCheckKeys(c.keys[i].name)
		c.keys[i].last.Store(-1)
	}
	return c
}

// keyOf returns the key of worker i: contender p×G+i of the case (p this
// process's index) uses key (p×G+i) mod K, so that the keys of a spread case
// are shared between processes.
func (c *contention) keyOf(i int) *sharedKey { return &c.keys[c.keyIndex(i)] }

func (c *contention) keyIndex(i int) int { return (c.spec.Process*len(c.workers) + i) % len(c.keys) }

// holderID names worker i in the server-side check, unique across the
// processes of a case.
func (c *contention) holderID(i int) string { return fmt.Sprintf("%d:%d", c.spec.Process, i) }

// dialCheckers connects every worker's checker when the case checks on the
// server. It blocks, bounded by ctx.
func (c *contention) dialCheckers(ctx context.Context) error {
	if c.spec.CheckAddr == "" {
		return nil
	}
	for i := range c.workers {
		ck, err := dialChecker(ctx, c.spec.CheckAddr, c.holderID(i))
		if err != nil {
			c.closeCheckers()
			return err
		}
		c.workers[i].ck = ck
	}
	return nil
}

// checkCalls sums the commands the workers' checkers have sent.
func (c *contention) checkCalls() int64 {
	var n int64
	for i := range c.workers {
		if ck := c.workers[i].ck; ck != nil {
			n += ck.calls.Load()
		}
	}
	return n
}

func (c *contention) closeCheckers() {
	for i := range c.workers {
		if ck := c.workers[i].ck; ck != nil {
			ck.close()
		}
	}
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
		if ws.lk == nil {
			ws.lk = bind(c.lib, k.name)
		}
		h, err := ws.lk.Lock(ctx)
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

// section is what one pass through the critical section saw.
type section struct {
	reacq   bool   // the previous holder of the key was this goroutine
	checked bool   // the server-side check ran (entry and exit)
	seq     int64  // grant sequence number (when checked)
	prev    string // previous holder's id (when checked)
}

// critical is goroutine i's critical section on k, holding the lock: the
// in-process overlap check and non-atomic counter around the server-side
// check (when the case has one) and the hold. acquiredAt, when not zero, is
// passed to the previous holder (W4's hand-off wake-up).
func (c *contention) critical(ctx context.Context, i int, k *sharedKey, acquiredAt time.Time) section {
	var s section
	if k.holders.Add(1) != 1 {
		c.violations.Add(1)
	}
	s.reacq = k.last.Swap(int32(i)) == int32(i)
	n := k.counter.Load()
	ck := c.workers[i].ck
	var e entry
	var err error
	if ck != nil {
		if e, err = ck.enter(ctx, k.check, acquiredAt); err != nil {
			c.errs.add(err)
			ck = nil
		} else if !e.marked {
			c.markers.Add(1)
		}
	}
	hold(c.spec.CSHold)
	if ck != nil {
		mine, err := ck.exit(ctx, k.check, e)
		switch {
		case err != nil:
			c.errs.add(err)
		default:
			if !mine {
				c.markers.Add(1)
			}
			k.checked.Add(1)
			// The server knows the previous holder across processes too.
			s.checked, s.seq, s.prev, s.reacq = true, e.seq, e.prev, e.prev == ck.id
		}
	}
	k.counter.Store(n + 1)
	k.acquisitions.Add(1)
	k.holders.Add(-1)
	return s
}

// hold keeps the caller in its critical section for d, yielding the
// processor meanwhile so that a lock that does not exclude lets another
// holder in; 0 returns at once.
func hold(d time.Duration) {
	if d <= 0 {
		return
	}
	for t := time.Now(); ; {
		runtime.Gosched()
		if time.Since(t) >= d {
			return
		}
	}
}

// count counts goroutine i's acquisition in the window.
func (c *contention) count(i int, s section) {
	ws := &c.workers[i]
	ws.acq.Add(1)
	if s.reacq {
		ws.reacq.Add(1)
	}
	if s.checked && c.spec.Processes > 1 {
		ws.grants = append(ws.grants, s.seq)
	}
}

// run runs body for every worker and the warm-up and window around them;
// it returns once the window has closed, the workers were told to stop and
// waited for (up to StopGrace), with the process's detail for RunSpread.
func (c *contention) run(ctx context.Context, win Window, r *Record, body func(ctx context.Context, i int)) (*ProcessDetail, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := c.dialCheckers(ctx); err != nil {
		return nil, err
	}
	defer c.closeCheckers()
	smp := startSampler(contentionSamplerInterval)
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
	var calls0 int64
	if sleepCtx(ctx, c.spec.Warmup) {
		if werr = c.w.open(win); werr == nil {
			calls0 = c.checkCalls()
			c.w.await(ctx, c.spec.Duration)
		}
	}
	if werr == nil {
		c.w.shut()
		r.CheckScripts = c.checkCalls() - calls0
		r.Waiting, r.WaitingOldestMs = c.waiting()
		werr = c.w.signalEnd(win)
	}
	cancel()
	finished := waitGroupFor(&wg, c.spec.StopGrace)
	if !finished {
		r.Abandoned = c.busy()
	}
	smp.finish(r)
	d := c.summarize(ctx, r, finished)
	return d, werr
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

// summarize fills the record and returns the process's detail. The counters
// are compared only when every worker has returned (finished): a stuck
// worker could still be inside a critical section. A spread case's server
// counter is compared by RunSpread, over every process's acquisitions.
func (c *contention) summarize(ctx context.Context, r *Record, finished bool) *ProcessDetail {
	d := &ProcessDetail{Process: c.spec.Process, PerGoroutine: make([]int64, len(c.workers)),
		Checked: make([]int64, len(c.keys)), Grants: make([][]int64, len(c.keys)), Finished: finished}
	var acq, reacq int64
	for i := range c.workers {
		d.PerGoroutine[i] = c.workers[i].acq.Load()
		acq += d.PerGoroutine[i]
		reacq += c.workers[i].reacq.Load()
	}
	d.Reacq = reacq
	r.Jain = Jain(d.PerGoroutine)
	r.MinPerG, r.MaxPerG = MinMax(d.PerGoroutine)
	if acq > 0 {
		r.ReacqPct = 100 * float64(reacq) / float64(acq)
	}
	r.MarkerViolations = c.markers.Load()
	r.Violations = c.violations.Load() + r.MarkerViolations
	r.CSHoldUs = float64(c.spec.CSHold.Nanoseconds()) / 1e3
	r.Processes = max(c.spec.Processes, 1)
	if finished {
		for i := range c.keys {
			k := &c.keys[i]
			r.CounterExpected += k.acquisitions.Load()
			got := k.counter.Load()
			r.CounterGot += got
			if got != k.acquisitions.Load() {
				r.Violations++
			}
			d.Checked[i] = k.checked.Load()
		}
		for i := range c.workers {
			ki := c.keyIndex(i)
			d.Grants[ki] = append(d.Grants[ki], c.workers[i].grants...)
		}
		if c.spec.CheckAddr != "" && c.spec.Processes <= 1 {
			c.checkServerCounters(ctx, r, d.Checked)
		}
	}
	c.lat.Summarize(r)
	d.Latency = c.lat.Export()
	c.errs.fill(r)
	r.GaveUps = c.gaveUps.Load()
	c.w.fill(r, acq)
	return d
}

// checkServerCounters compares every key's server-side counter with the
// acquisitions whose check completed (one process: they are all here).
func (c *contention) checkServerCounters(ctx context.Context, r *Record, checked []int64) {
	names := make([]string, len(c.keys))
	for i := range c.keys {
		names[i] = c.keys[i].name
	}
	exp, got, bad, err := CompareCounters(context.WithoutCancel(ctx), c.spec.CheckAddr, names, checked)
	if err != nil {
		c.errs.add(err)
		return
	}
	r.ServerCounterExpected, r.ServerCounterGot = exp, got
	r.Violations += bad
}

// runContended is W2: G goroutines on K keys (goroutine i uses key i%K; in a
// spread case contender p×G+i) with blocking acquire and no think time. One
// op is one acquisition; its latency is the wait from starting to want the
// lock until holding it.
func runContended(ctx context.Context, lib Library, spec Spec, win Window, r *Record) (*ProcessDetail, error) {
	c := newContention(lib, spec, spec.Keys)
	return c.run(ctx, win, r, func(ctx context.Context, i int) {
		k := c.keyOf(i)
		for ctx.Err() == nil {
			h, wait, ok := c.acquire(ctx, i, k)
			if !ok {
				return
			}
			s := c.critical(ctx, i, k, time.Time{})
			if c.w.measuring() {
				c.lat.Record(i, wait)
				c.count(i, s)
			}
			if err := h.Unlock(context.Background()); err != nil {
				c.errs.add(err)
			}
		}
	})
}

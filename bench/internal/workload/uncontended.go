package workload

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// pairWorker is one W1 goroutine's state, read by the case's main goroutine
// at the end of the window.
type pairWorker struct {
	since atomic.Int64 // unix nanos when the pair in flight started; 0 = none
	ops   atomic.Int64 // pairs completed in the window
	_     [48]byte     // keeps workers' hot counters on separate cache lines
}

// runPairs is W1 (and raw): G goroutines, each locking and unlocking its own
// key in a loop. One op is one pair; its latency runs from calling Lock to
// Unlock returning.
func runPairs(ctx context.Context, lib Library, spec Spec, win Window, r *Record) error {
	g := max(spec.Goroutines, 1)
	r.Keys = g
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	smp := startSampler(samplerInterval)
	w := newWindow(lib)
	lat := NewLatencies(shards(g))
	var errs errorLog
	var gaveUps atomic.Int64
	workers := make([]pairWorker, g)
	var wg sync.WaitGroup
	for i := 0; i < g; i++ {
		wg.Add(1)
		// Owned by runPairs: ends when ctx is cancelled after the window;
		// waited for (up to StopGrace) below.
		go func(i int) {
			defer wg.Done()
			pairLoop(ctx, lib, spec.key(i), i, &workers[i], w, lat, &errs, &gaveUps)
		}(i)
	}
	var werr error
	if sleepCtx(ctx, spec.Warmup) {
		if werr = w.open(win); werr == nil {
			sleepCtx(ctx, spec.Duration)
		}
	}
	if werr == nil {
		w.shut()
		r.Stalled, r.StalledOldestMs = stalled(workers, spec.StallAge)
		werr = w.signalEnd(win)
	}
	cancel()
	if !waitGroupFor(&wg, spec.StopGrace) {
		r.Abandoned = countBusy(workers)
	}
	smp.finish(r)
	var ops int64
	for i := range workers {
		ops += workers[i].ops.Load()
	}
	w.fill(r, ops)
	lat.Summarize(r)
	errs.fill(r)
	r.GaveUps = gaveUps.Load()
	return werr
}

func pairLoop(ctx context.Context, lib Library, key string, i int, ws *pairWorker, w *window,
	lat *Latencies, errs *errorLog, gaveUps *atomic.Int64) {
	lk := bind(lib, key)
	for ctx.Err() == nil {
		t0 := time.Now()
		ws.since.Store(t0.UnixNano())
		h, err := lk.Lock(ctx)
		if err != nil {
			ws.since.Store(0)
			switch {
			case ctx.Err() != nil:
				return
			case errors.Is(err, ErrGaveUp):
				gaveUps.Add(1)
			default:
				errs.add(err)
				sleepCtx(ctx, errorBackoff)
			}
			continue
		}
		// Unlock is not bounded by ctx: a pair that started completes, so the
		// key is left free even when the window closes mid-pair.
		err = h.Unlock(context.Background())
		t1 := time.Now()
		ws.since.Store(0)
		if err != nil {
			errs.add(err)
			continue
		}
		if w.measuring() {
			lat.Record(i, t1.Sub(t0))
			ws.ops.Add(1)
		}
	}
}

// stalled counts workers whose operation has been in flight for longer than
// age, and returns the oldest such operation's age in milliseconds.
func stalled(workers []pairWorker, age time.Duration) (n int, oldestMs float64) {
	now := time.Now().UnixNano()
	for i := range workers {
		s := workers[i].since.Load()
		if s == 0 {
			continue
		}
		if d := time.Duration(now - s); d > age {
			n++
			oldestMs = max(oldestMs, float64(d)/1e6)
		}
	}
	return n, oldestMs
}

// countBusy counts workers still inside an operation.
func countBusy(workers []pairWorker) int {
	n := 0
	for i := range workers {
		if workers[i].since.Load() != 0 {
			n++
		}
	}
	return n
}

package workload

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// runHeld is W3: N locks (spec.Keys) taken under the library's watchdog
// (Config.WatchdogTTL) by 64 acquirer goroutines, held for spec.Hold, checked
// and released. The window is the hold: renewal commands, client and server
// CPU are measured over it. Heap, stacks, goroutines and RSS are sampled
// mid-hold after a forced collection; "base" is before the first acquire.
func runHeld(ctx context.Context, lib Library, spec Spec, win Window, r *Record) error {
	wd, ok := lib.(Watchdog)
	if !ok {
		return fmt.Errorf("%w: no watchdog or extend API", ErrUnsupported)
	}
	n := max(spec.Keys, 1)
	r.Keys = n
	r.Goroutines = defaultAcquirers
	interval, batch := wd.RenewPlan()
	if interval > 0 {
		r.RenewCmdsExpected = float64(ceilDiv(n, max(batch, 1))) / interval.Seconds()
	}
	// The harness's own per-lock state (this slice) is allocated before the base snapshot, so the heap per lock
	// counts what the library keeps (and the library adapter's handle), not the harness.
	held := make([]WatchedHeld, n)
	r.HeapBaseBytes, _, r.GoroutinesBase = heapSnapshot()
	smp := startSampler(samplerInterval)
	defer smp.finish(r)
	w := newWindow(lib)
	lat := NewLatencies(shards(defaultAcquirers))
	var errs errorLog
	defer errs.fill(r)

	var next atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	// The acquisitions are bounded (a library can block forever on a free key:
	// rueidislock does, intermittently); locks not taken by then are reported as not
	// acquired, and acquirers stuck past the bound are abandoned.
	budget := spec.AcquireTimeout
	if budget <= 0 {
		budget = AcquireBudget(n)
	}
	actx, cancelAcquire := context.WithTimeout(ctx, budget)
	defer cancelAcquire()
	var mu sync.Mutex       // guards held and stopped while acquirers may still run
	var stopped bool        // the acquisition is over: a late acquirer releases what it got
	var inCall atomic.Int32 // acquirers inside LockWatched
	for a := 0; a < defaultAcquirers; a++ {
		wg.Add(1)
		// Owned by runHeld: ends when every index is taken or ctx ends; waited
		// for just below.
		go func(a int) {
			defer wg.Done()
			for actx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				s := time.Now()
				inCall.Add(1)
				h, err := wd.LockWatched(actx, spec.key(i))
				inCall.Add(-1)
				if err != nil {
					if actx.Err() == nil {
						errs.add(err)
					}
					continue
				}
				lat.Record(a, time.Since(s))
				mu.Lock()
				late := stopped
				if !late {
					held[i] = h
				}
				mu.Unlock()
				if late {
					_ = h.Unlock(context.Background())
					return
				}
			}
		}(a)
	}
	if !waitGroupFor(&wg, budget+spec.StopGrace) {
		r.Abandoned = int(inCall.Load())
		r.Notes = append(r.Notes, "acquirers stuck in the library past the acquisition bound")
	}
	cancelAcquire()
	r.AcquireSec = time.Since(t0).Seconds()
	mu.Lock()
	stopped = true // a stuck acquirer that returns late no longer touches held (no copy: it would count as heap)
	mu.Unlock()
	for _, h := range held {
		if h != nil {
			r.Acquired++
		}
	}
	if r.Acquired < n {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d locks not acquired within %s", n-r.Acquired, n, budget))
	}
	if r.AcquireSec > 0 {
		r.OpsPerSec = float64(r.Acquired) / r.AcquireSec
	}
	lat.Summarize(r)

	werr := w.open(win)
	if werr == nil {
		if sleepCtx(ctx, spec.Hold/2) {
			r.HeapHoldBytes, r.StackHoldBytes, r.GoroutinesHold = heapSnapshot()
			r.RSSHoldBytes = residentBytes()
		}
		sleepCtx(ctx, spec.Hold-spec.Hold/2)
		w.shut()
		werr = w.signalEnd(win)
	}
	w.fill(r, int64(r.Acquired))
	r.Ops = int64(r.Acquired)
	if r.AcquireSec > 0 {
		r.OpsPerSec = float64(r.Acquired) / r.AcquireSec
	}
	r.HoldSec = r.WindowSec
	if r.Acquired > 0 && r.HeapHoldBytes > r.HeapBaseBytes {
		r.HeapBytesPerLock = float64(r.HeapHoldBytes-r.HeapBaseBytes) / float64(r.Acquired)
	}

	live := make([]WatchedHeld, 0, r.Acquired)
	for _, h := range held {
		if h == nil {
			continue
		}
		live = append(live, h)
		if h.Lost() {
			r.LostLib++
		}
	}
	if oc, ok := lib.(OwnershipChecker); ok {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
		owned, err := oc.CountOwned(cctx, live)
		cancel()
		if err != nil {
			errs.add(fmt.Errorf("checking ownership on the server: %w", err))
		} else {
			r.LostServer = int64(len(live) - owned)
		}
	} else {
		r.Notes = append(r.Notes, "no server-side ownership check for this library")
	}
	r.Lost = max(r.LostLib, r.LostServer)

	t1 := time.Now()
	if !releaseAll(live, &errs, budget) {
		r.Notes = append(r.Notes, "releases stuck in the library past the bound")
	}
	r.ReleaseSec = time.Since(t1).Seconds()
	return werr
}

// AcquireBudget bounds W3's acquisition (and release) of n locks: 20 s plus
// 100 µs per lock (21 s for 10,000, 2 min for 1,000,000).
func AcquireBudget(n int) time.Duration {
	return 20*time.Second + time.Duration(n)*100*time.Microsecond
}

// releaseAll unlocks every lock with 64 goroutines, and reports whether they
// all returned within budget.
func releaseAll(held []WatchedHeld, errs *errorLog, budget time.Duration) bool {
	var next atomic.Int64
	var wg sync.WaitGroup
	for a := 0; a < defaultAcquirers; a++ {
		wg.Add(1)
		// Owned by releaseAll: ends when every lock was released; waited for
		// up to budget (a release stuck in the library is abandoned).
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(held) {
					return
				}
				if err := held[i].Unlock(context.Background()); err != nil {
					errs.add(err)
				}
			}
		}()
	}
	return waitGroupFor(&wg, budget)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

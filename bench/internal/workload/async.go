package workload

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// asyncEvent is a completion delivered to W5's one goroutine.
type asyncEvent struct {
	key    int
	unlock bool // true: an UnlockAsync completed; false: a LockAsync did
	held   Held
	err    error
}

// runAsync is W5: one goroutine keeps spec.Keys lock+unlock pairs in flight
// through the library's async API, each on its own key, reacting to
// completions delivered by callbacks. One op is one pair, from issuing
// LockAsync to UnlockAsync's completion.
func runAsync(ctx context.Context, lib Library, spec Spec, win Window, r *Record) error {
	al, ok := lib.(Async)
	if !ok {
		return fmt.Errorf("%w: no async API", ErrUnsupported)
	}
	k := max(spec.Keys, 1)
	r.Keys = k
	r.Goroutines = 1
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	smp := startSampler(samplerInterval)
	defer smp.finish(r)
	w := newWindow(lib)
	lat := NewLatencies(1)
	var errs errorLog
	defer errs.fill(r)

	// Every key has at most one operation in flight, so at most k events are
	// pending and a callback's send never blocks.
	events := make(chan asyncEvent, k)
	started := make([]time.Time, k) // owned by this goroutine
	names := make([]string, k)
	lock := func(i int) {
		started[i] = time.Now()
		al.LockAsync(ctx, names[i], func(h Held, err error) {
			events <- asyncEvent{key: i, held: h, err: err}
		})
	}
	for i := range names {
		names[i] = spec.key(i)
		lock(i)
	}

	var ops int64
	warm := time.NewTimer(spec.Warmup)
	defer warm.Stop()
	var end <-chan time.Time
	var werr error
loop:
	for {
		select {
		case <-warm.C:
			if werr = w.open(win); werr != nil {
				break loop
			}
			t := time.NewTimer(spec.Duration)
			defer t.Stop()
			end = t.C
		case <-end:
			w.shut()
			r.Stalled, r.StalledOldestMs = oldest(started, spec.StallAge)
			werr = w.signalEnd(win)
			break loop
		case <-ctx.Done():
			break loop
		case ev := <-events:
			switch {
			case ev.err != nil && !ev.unlock:
				if !errors.Is(ev.err, ErrGaveUp) {
					errs.add(ev.err)
				}
				lock(ev.key)
			case !ev.unlock:
				h := ev.held
				i := ev.key
				al.UnlockAsync(context.Background(), h, func(err error) {
					events <- asyncEvent{key: i, unlock: true, err: err}
				})
			default:
				if ev.err != nil {
					errs.add(ev.err)
				} else if w.measuring() {
					lat.Record(0, time.Since(started[ev.key]))
					ops++
				}
				lock(ev.key)
			}
		}
	}
	cancel()
	// Collect the operations still in flight, so that no callback outlives
	// the case (bounded: a library that never completes is reported).
	grace := time.NewTimer(spec.StopGrace)
	defer grace.Stop()
	for inFlight := k; inFlight > 0; {
		select {
		case ev := <-events:
			if !ev.unlock && ev.err == nil {
				i := ev.key
				al.UnlockAsync(context.Background(), ev.held, func(err error) {
					events <- asyncEvent{key: i, unlock: true, err: err}
				})
				continue
			}
			inFlight--
		case <-grace.C:
			r.Abandoned = inFlight
			inFlight = 0
		}
	}
	w.fill(r, ops)
	lat.Summarize(r)
	return werr
}

// oldest counts in-flight pairs started more than age ago and returns the
// oldest one's age in milliseconds.
func oldest(started []time.Time, age time.Duration) (n int, oldestMs float64) {
	now := time.Now()
	for _, s := range started {
		if d := now.Sub(s); d > age {
			n++
			oldestMs = max(oldestMs, float64(d)/1e6)
		}
	}
	return n, oldestMs
}

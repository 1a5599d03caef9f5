package workload

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// handoff is W4's shared state on its one key.
type handoff struct {
	lastUnlock   atomic.Int64 // unix nanos just before the last Unlock call
	lastReleaser atomic.Int32 // who made it; -1 before the first

	mu       sync.Mutex    // guards acquired
	acquired chan struct{} // closed (and replaced) at every acquisition
}

// next returns the channel the next acquisition closes.
func (h *handoff) next() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.acquired
}

// announce wakes the goroutines waiting for an acquisition.
func (h *handoff) announce() {
	h.mu.Lock()
	close(h.acquired)
	h.acquired = make(chan struct{})
	h.mu.Unlock()
}

// runHandoff is W4: G goroutines on one key. A goroutine that releases the
// lock does not ask for it again until another goroutine has acquired it, so
// every acquisition is a hand-off; one op is one hand-off, its latency runs
// from just before the releaser's Unlock call to the next holder's Lock
// returning (release round trip, wake-up, acquire round trip, back-off).
func runHandoff(ctx context.Context, lib Library, spec Spec, win Window, r *Record) error {
	r.Keys = 1
	c := newContention(lib, spec, 1)
	ho := &handoff{acquired: make(chan struct{})}
	ho.lastReleaser.Store(-1)
	k := &c.keys[0]
	return c.run(ctx, win, r, func(ctx context.Context, i int) {
		ws := &c.workers[i]
		for ctx.Err() == nil {
			h, _, ok := c.acquire(ctx, i, k)
			if !ok {
				return
			}
			now := time.Now()
			from := ho.lastReleaser.Load()
			reacq := c.critical(i, k)
			if c.w.measuring() && from >= 0 && from != int32(i) {
				c.lat.Record(i, now.Sub(time.Unix(0, ho.lastUnlock.Load())))
				ws.acq.Add(1)
				if reacq {
					ws.reacq.Add(1)
				}
			}
			ho.announce()
			next := ho.next()
			ho.lastReleaser.Store(int32(i))
			ho.lastUnlock.Store(time.Now().UnixNano())
			if err := h.Unlock(context.Background()); err != nil {
				c.errs.add(err)
			}
			select {
			case <-next:
			case <-ctx.Done():
				return
			}
		}
	})
}

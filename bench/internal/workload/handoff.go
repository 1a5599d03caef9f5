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

// runHandoff is W4: G goroutines on one key (in every process of a spread
// case). A goroutine that releases the lock does not ask for it again until
// another goroutine has acquired it, so every acquisition is a hand-off; one
// op is one hand-off, its latency runs from just before the releaser's
// Unlock call to the next holder's Lock returning (release round trip,
// wake-up, acquire round trip, back-off).
//
// With the server-side check, the next holder tells the releaser through the
// server (the check's entry pushes the instant Lock returned to the previous
// holder's list), which works across processes, and the releaser records
// the latency; without it (tests), an in-process broadcast does.
func runHandoff(ctx context.Context, lib Library, spec Spec, win Window, r *Record) (*ProcessDetail, error) {
	r.Keys = 1
	spec.Keys = 1
	c := newContention(lib, spec, 1)
	k := &c.keys[0]
	if spec.CheckAddr != "" {
		return c.run(ctx, win, r, func(ctx context.Context, i int) { c.handoffViaServer(ctx, i, k) })
	}
	ho := &handoff{acquired: make(chan struct{})}
	ho.lastReleaser.Store(-1)
	return c.run(ctx, win, r, func(ctx context.Context, i int) {
		for ctx.Err() == nil {
			h, _, ok := c.acquire(ctx, i, k)
			if !ok {
				return
			}
			now := time.Now()
			from := ho.lastReleaser.Load()
			s := c.critical(ctx, i, k, time.Time{})
			if c.w.measuring() && from >= 0 && from != int32(i) {
				c.lat.Record(i, now.Sub(time.Unix(0, ho.lastUnlock.Load())))
				c.count(i, s)
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

// handoffViaServer is worker i's W4 loop when the server carries the
// hand-off: the check's entry names the previous holder and wakes it with
// the instant of this acquisition; after its Unlock, the worker waits for
// its own wake-up and records the hand-off it started.
func (c *contention) handoffViaServer(ctx context.Context, i int, k *sharedKey) {
	ck := c.workers[i].ck
	for ctx.Err() == nil {
		h, _, ok := c.acquire(ctx, i, k)
		if !ok {
			return
		}
		s := c.critical(ctx, i, k, time.Now())
		if c.w.measuring() && s.checked && s.prev != "" && s.prev != ck.id {
			c.count(i, s)
		}
		unlockAt := time.Now()
		if err := h.Unlock(context.Background()); err != nil {
			c.errs.add(err)
		}
		at, ok, err := ck.awaitHandoff(ctx, k.check)
		switch {
		case err != nil:
			c.errs.add(err)
			sleepCtx(ctx, errorBackoff)
		case ok && c.w.measuring():
			c.lat.Record(i, at.Sub(unlockAt))
		}
	}
}

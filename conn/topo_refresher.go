package conn

import (
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/timer"
)

// refreshGap is the shortest time between two topology refreshes: errors during a failover come by the thousand,
// one refresh per gap answers them all.
const refreshGap = 100 * time.Millisecond

// While the topology is degraded (a master unreachable: a failover in progress, or a server down for good), it is
// refreshed every degradedMin, doubling up to degradedMax as the state persists: quick during a failover, cheap
// when a master stays down.
const (
	degradedMin = 100 * time.Millisecond
	degradedMax = 2 * time.Second
)

// refresher runs a topology refresh (a cluster's slot map, a Sentinel Client's master) on a short-lived goroutine:
// at most one at a time, at most one per refreshGap, plus one every period. A trigger during a run asks for one
// more run after it. Its goroutines are owned by the Client (wg); its timeouts ride the Client's wheel.
type refresher struct {
	c      *Client
	run    func() // the refresh itself; blocks (network), bounded by the Client's DialTimeout per query
	period time.Duration

	mu       sync.Mutex
	degraded int // consecutive degraded runs, for the polling backoff
	running  bool
	again    bool
	closed   bool
	last     time.Time
	soon     *timer.Timeout // a trigger that came within refreshGap of the last run
	tick     *timer.Timeout // the periodic refresh
}

// start arms the periodic refresh (none when period is not positive).
func (r *refresher) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armTickLocked()
}

func (r *refresher) armTickLocked() {
	if r.period <= 0 || r.closed {
		return
	}
	if to, err := r.c.tm.NewTimeout(r, r.period); err == nil {
		r.tick = to
	}
}

// trigger asks for a refresh as soon as the gap allows. Never blocks; safe for concurrent use, from any goroutine
// (event loops, the timer's worker).
func (r *refresher) trigger() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if r.running {
		r.again = true
		return
	}
	if wait := refreshGap - time.Since(r.last); wait > 0 {
		if r.soon == nil {
			if to, err := r.c.tm.NewTimeout(r, wait); err == nil {
				r.soon = to
			}
		}
		return
	}
	r.running = true
	r.last = time.Now()
	r.c.wg.Add(1)
	go r.loop() // owner: the Client (wg); exits after this run (and the runs triggered during it)
}

// stillDegraded is called by a run that found the topology degraded: another run follows after the polling
// backoff (unless one is already planned). Never blocks.
func (r *refresher) stillDegraded() {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := degradedMax
	if r.degraded < 5 {
		d = min(degradedMin<<r.degraded, degradedMax)
	}
	r.degraded++
	if r.closed || r.soon != nil {
		return
	}
	if to, err := r.c.tm.NewTimeout(r, d); err == nil {
		r.soon = to
	}
}

// healthy is called by a run that found the topology healthy: the polling backoff starts over.
func (r *refresher) healthy() {
	r.mu.Lock()
	r.degraded = 0
	r.mu.Unlock()
}

// loop runs the refresh, then once more if triggered meanwhile (through trigger, so the gap holds).
func (r *refresher) loop() {
	defer r.c.wg.Done()
	r.run()
	r.mu.Lock()
	r.running = false
	again := r.again
	r.again = false
	r.mu.Unlock()
	if again {
		r.trigger()
	}
}

// Run is the timer task of the delayed trigger and of the periodic refresh.
func (r *refresher) Run(t *timer.Timeout) {
	r.mu.Lock()
	switch t {
	case r.soon:
		r.soon = nil
	case r.tick:
		r.tick = nil
		r.armTickLocked()
	default:
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	r.trigger()
}

// close stops the refresher: no run starts after it (the Client waits for one in progress through wg).
func (r *refresher) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, t := range []*timer.Timeout{r.soon, r.tick} {
		if t != nil {
			t.Cancel()
		}
	}
	r.soon, r.tick = nil, nil
}

package faultproxy

import (
	"sync"
	"time"
)

// Direction selects which way of a connection a fault applies to.
type Direction uint8

// Directions.
const (
	Upstream   Direction = 1 << iota // client to server (requests)
	Downstream                       // server to client (replies)
	Both       = Upstream | Downstream
)

func (d Direction) String() string {
	switch d {
	case Upstream:
		return "upstream"
	case Downstream:
		return "downstream"
	case Both:
		return "both"
	}
	return "none"
}

// faults is the current fault configuration. Writers wait on changed, which
// is closed and replaced on every change, so a change wakes every waiter.
type faults struct {
	mu        sync.Mutex // guards the fields below
	latency   [2]time.Duration
	stalled   [2]bool
	withhold  [2]bool   // chunks read now are marked withheld (Withhold)
	partition bool      // black-hole until partEnd (forever when partEnd is zero)
	partEnd   time.Time // zero: until Restore
	cut       [2]int64  // bytes each link may forward after cutGen changed; negative: no cut
	cutGen    [2]uint64 // bumped by every CutAfter so links pick up a new budget
	refuse    bool
	changed   chan struct{}
}

func newFaults() *faults { return &faults{changed: make(chan struct{}), cut: [2]int64{-1, -1}} }

// wait blocks while blocked reports true, waking on every fault change, at
// the wake time blocked returns (zero: no timed wake-up) and when done closes.
// It returns false when done closed first.
func (f *faults) wait(done <-chan struct{}, blocked func(now time.Time) (bool, time.Time)) bool {
	for {
		f.mu.Lock()
		now := time.Now()
		changed := f.changed
		b, wake := blocked(now)
		f.mu.Unlock()
		if !b {
			return true
		}
		var timer *time.Timer
		var timerC <-chan time.Time
		if !wake.IsZero() {
			timer = time.NewTimer(wake.Sub(now))
			timerC = timer.C
		}
		select {
		case <-changed:
		case <-timerC:
		case <-done:
		}
		if timer != nil {
			timer.Stop()
		}
		select {
		case <-done:
			return false
		default:
		}
	}
}

// update applies fn under the lock and wakes every waiter.
func (f *faults) update(fn func(f *faults)) {
	f.mu.Lock()
	fn(f)
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// partitionedLocked reports whether a partition is in force at now, and until
// when (zero: until Restore).
func (f *faults) partitionedLocked(now time.Time) (bool, time.Time) {
	if !f.partition {
		return false, time.Time{}
	}
	if !f.partEnd.IsZero() && !now.Before(f.partEnd) {
		return false, time.Time{}
	}
	return true, f.partEnd
}

// forDirs runs fn for the array index of each direction in d.
func forDirs(d Direction, fn func(i int)) {
	if d&Upstream != 0 {
		fn(0)
	}
	if d&Downstream != 0 {
		fn(1)
	}
}

package workload

import (
	"testing"
	"time"
)

func TestPairsCountsPairsLatenciesAndCommands(t *testing.T) {
	const g = 8
	r := run(t, newMemLib(), spec(UncontendedPairs, g, 0))
	if r.Ops == 0 || r.OpsPerSec <= 0 || r.LatencyCount != r.Ops {
		t.Fatalf("ops %d, ops/s %v, latencies %d", r.Ops, r.OpsPerSec, r.LatencyCount)
	}
	if r.Keys != g {
		t.Errorf("keys = %d, want one per goroutine", r.Keys)
	}
	// The fake counts one command per Lock and one per Unlock. Commands are counted between the window's edges
	// and pairs when they complete inside it: each goroutine's pair in flight at an edge may add or miss a
	// command (2 per goroutine), and the fake is so fast that a preemption between reading the count and opening
	// the window lets more through (allowed: 0.5 %). Double or missed counting is far outside either.
	if d, slack := r.ClientCmds-2*r.Ops, 2*g+r.ClientCmds/200; d < -slack || d > slack {
		t.Errorf("client cmds = %d for %d pairs (%.3f per pair), want 2 per pair ± 2 per goroutine",
			r.ClientCmds, r.Ops, r.ClientCmdsPerOp)
	}
	if r.WindowSec < 0.19 || r.WindowSec > 1 {
		t.Errorf("window = %v s for a 200 ms window", r.WindowSec)
	}
	if r.Stalled != 0 || r.Abandoned != 0 || r.Errors != 0 {
		t.Errorf("stalled %d, abandoned %d, errors %d", r.Stalled, r.Abandoned, r.Errors)
	}
	if r.GoroutinesPeak < g {
		t.Errorf("goroutines peak %d with %d workers", r.GoroutinesPeak, g)
	}
}

func TestPairsReportsStalledAndAbandonedWorkersAndStillFinishes(t *testing.T) {
	lib := &stuckLib{release: make(chan struct{})}
	defer close(lib.release) // lets the abandoned workers go before goleak looks
	s := spec(UncontendedPairs, 4, 0)
	s.Duration = 1200 * time.Millisecond
	s.StallAge = time.Second
	s.StopGrace = 100 * time.Millisecond
	start := time.Now()
	r := run(t, lib, s)
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Run took %v with workers stuck in the library", took)
	}
	if r.Stalled != 4 || r.StalledOldestMs < 1000 {
		t.Errorf("stalled = %d (oldest %.0f ms), want 4 older than 1 s", r.Stalled, r.StalledOldestMs)
	}
	if r.Abandoned != 4 {
		t.Errorf("abandoned = %d, want 4", r.Abandoned)
	}
	if r.Ops != 0 {
		t.Errorf("ops = %d", r.Ops)
	}
}

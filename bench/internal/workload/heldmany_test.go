package workload

import (
	"testing"
	"time"
)

func TestHeldCountsLossesReportedByTheLibraryAndTheServer(t *testing.T) {
	lib := newMemLib()
	s := spec(HeldMany, 0, 300)
	lib.lost[s.keyWithDefaults(7)] = true
	lib.lost[s.keyWithDefaults(42)] = true
	r := run(t, lib, s)
	if r.Acquired != 300 || r.Keys != 300 {
		t.Fatalf("acquired %d of %d", r.Acquired, r.Keys)
	}
	if r.LostLib != 2 || r.LostServer != 2 || r.Lost != 2 {
		t.Errorf("lost lib/server/total = %d/%d/%d, want 2/2/2", r.LostLib, r.LostServer, r.Lost)
	}
	if r.RenewCmdsExpected != 3 { // ceil(300/100) batches every second
		t.Errorf("expected renewals/s = %v, want 3", r.RenewCmdsExpected)
	}
	if r.HoldSec < 0.09 || r.AcquireSec <= 0 || r.OpsPerSec <= 0 {
		t.Errorf("hold %v s, acquire %v s, rate %v", r.HoldSec, r.AcquireSec, r.OpsPerSec)
	}
	if r.GoroutinesBase <= 0 || r.HeapHoldBytes == 0 {
		t.Errorf("goroutines base %d, heap hold %d", r.GoroutinesBase, r.HeapHoldBytes)
	}
}

func TestHeldBoundsAcquisitionsThatNeverReturn(t *testing.T) {
	lib := newMemLib()
	defer close(lib.unhang) // lets the stuck acquirer go before goleak looks
	s := spec(HeldMany, 0, 50)
	s.AcquireTimeout = 200 * time.Millisecond
	s.StopGrace = 100 * time.Millisecond
	lib.hang[s.keyWithDefaults(3)] = true
	start := time.Now()
	r := run(t, lib, s)
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("W3 took %v with one acquisition stuck", took)
	}
	if r.Acquired != 49 {
		t.Errorf("acquired %d, want 49 of 50", r.Acquired)
	}
	if r.Abandoned != 1 || len(r.Notes) == 0 {
		t.Errorf("abandoned %d, notes %q: the stuck acquirer is not reported", r.Abandoned, r.Notes)
	}
}

func TestHeldIsNotApplicableWithoutAWatchdog(t *testing.T) {
	r := run(t, &stuckLib{}, spec(HeldMany, 0, 10))
	if r.NotApplicable == "" {
		t.Fatal("a library without Watchdog ran W3")
	}
}

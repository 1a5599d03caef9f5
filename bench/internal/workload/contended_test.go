package workload

import "testing"

func TestContendedFindsNoViolationWithARealLock(t *testing.T) {
	r := run(t, newMemLib(), spec(ContendedKeys, 16, 2))
	if r.Ops == 0 {
		t.Fatal("no acquisition")
	}
	if r.Violations != 0 || r.CounterExpected != r.CounterGot || r.CounterExpected < r.Ops {
		t.Fatalf("violations %d, counter %d/%d, ops %d", r.Violations, r.CounterExpected, r.CounterGot, r.Ops)
	}
	if r.Jain <= 0 || r.Jain > 1 || r.MinPerG > r.MaxPerG {
		t.Errorf("Jain %v, min/max %d/%d", r.Jain, r.MinPerG, r.MaxPerG)
	}
	if r.ReacqPct < 0 || r.ReacqPct > 100 {
		t.Errorf("reacq %v%%", r.ReacqPct)
	}
}

func TestContendedCountsOverlapsWhenTheLockDoesNotExclude(t *testing.T) {
	lib := newMemLib()
	lib.broken = true
	r := run(t, lib, spec(ContendedKeys, 16, 1))
	if r.Violations == 0 {
		t.Fatalf("a lock without mutual exclusion passed the check (%d acquisitions)", r.Ops)
	}
}

package workload

import "testing"

func TestHandoffMeasuresEveryAcquisitionAsAHandOff(t *testing.T) {
	r := run(t, newMemLib(), spec(Handoff, 4, 1))
	if r.Ops == 0 || r.LatencyCount != r.Ops {
		t.Fatalf("hand-offs %d, latencies %d", r.Ops, r.LatencyCount)
	}
	if r.ReacqPct != 0 {
		t.Errorf("reacq = %v%%: a releaser waits for another holder before asking again", r.ReacqPct)
	}
	if r.Violations != 0 {
		t.Errorf("violations = %d", r.Violations)
	}
}

package resp

import (
	"strconv"
	"testing"
)

func itoa(i int) string { return strconv.Itoa(i) }

// testingAllocs returns the average allocations of f, skipping the test under the race detector (whose
// instrumentation changes allocation counts). Allocation counts are deterministic, unlike timings, so tests may
// assert them.
func testingAllocs(t *testing.T, f func()) float64 {
	t.Helper()
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	return testing.AllocsPerRun(100, f)
}

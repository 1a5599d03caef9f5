package proccpu

import (
	"testing"
	"time"
)

// Busy work shows up as CPU time, and the reading never goes backwards.
func TestUsedGrowsWithWork(t *testing.T) {
	before := Used()
	if before <= 0 {
		t.Fatalf("Used() = %v at start; want > 0 (the runtime has run)", before)
	}
	deadline := time.Now().Add(50 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	after := Used()
	if after <= before {
		t.Fatalf("Used() = %v after %d iterations of busy work; want more than %v", after, x, before)
	}
}

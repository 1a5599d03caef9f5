package resp

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind (the live tests dial real servers).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package integration

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: every client, server helper and waiter must be
// gone when its test ends. gnet's global worker pool (ants) starts its goroutines at package init, before any
// test, and they are not ours: IgnoreCurrent takes them out.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

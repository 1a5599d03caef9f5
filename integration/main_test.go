package integration

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: every client, server helper and waiter must be
// gone when its test ends. gnet's global worker pool (ants) starts its goroutines at package init, before any
// test, and they are not ours: IgnoreCurrent takes them out.
//
// The test binary doubles as the lock-holding child process of TestKilledProcessFreesLock: started with
// childEnv set, it runs runLockChild instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runLockChild())
	}
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

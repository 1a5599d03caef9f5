package chaos

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// workerEnv makes the test binary a chaos worker: Run starts workers by re-executing the test binary with it set
// (see workerCommand), so the workers are built with the same flags (-race included) as the test.
const workerEnv = "LOCKSMITH_CHAOS_WORKER"

// TestMain runs a worker when started as one, and otherwise the tests with a goroutine-leak check (the run's
// reapers, sampler and proxies must all be gone when a test ends; gnet's pool goroutines start at init and are
// not ours).
func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		os.Exit(WorkerMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

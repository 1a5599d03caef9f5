package workload

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// caseEnv makes the test binary a case process (CaseMain with the test
// libraries) instead of running tests: the spread tests start it that way.
const caseEnv = "WORKLOAD_TEST_CASE_PROCESS"

// The package takes its scripts from rlock, which links gnet, whose global
// worker pool (ants) starts goroutines at package init: IgnoreCurrent leaves
// them out; everything the tests start must be gone at the end.
func TestMain(m *testing.M) {
	if os.Getenv(caseEnv) != "" {
		os.Exit(CaseMain(os.Args[1:], testFactories, os.Stdin, os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

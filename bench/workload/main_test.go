package workload

import (
	"testing"

	"go.uber.org/goleak"
)

// The package takes its scripts from rlock, which links gnet, whose global
// worker pool (ants) starts goroutines at package init: IgnoreCurrent leaves
// them out; everything the tests start must be gone at the end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }

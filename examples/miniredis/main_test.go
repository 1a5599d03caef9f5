package miniredis_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every client and miniredis server a test starts is closed when it ends. gnet's global worker pool (started at
// package init) is not ours: IgnoreCurrent.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

package rlock

import (
	"testing"

	"go.uber.org/goleak"
)

// The package starts no goroutine of its own, and every Client its tests and examples create is closed: nothing
// may outlive them. gnet's global worker pool (started at package init) is not ours: IgnoreCurrent.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

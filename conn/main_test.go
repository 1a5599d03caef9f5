package conn_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every Client closes its event loops, dial goroutines and TLS goroutines in Close; the tests check that nothing
// they started outlives them. gnet's global worker pool (ants) starts its goroutines at package init, before any
// test, and they are not ours: IgnoreCurrent takes them out.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

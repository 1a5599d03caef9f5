package future_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The package starts no goroutine of its own; the tests start many (completers,
// waiters), and each must have ended when the tests do.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

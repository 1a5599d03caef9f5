//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd) || locksmith_portable

package conn

import (
	"testing"
	"time"
)

// trustIdleLane makes pick use an idle lane without checking it for a close by the server, until restore is
// called (or the test ends). On the portable path a lane unread for laneProbeAfter is handed to its background
// reader and the command goes to an event-loop connection; tests that count the lane's round trips or handovers
// would then depend on the machine never pausing a millisecond between two commands.
func trustIdleLane(t *testing.T) (restore func()) {
	t.Helper()
	laneUnverifiedAfter.Store(int64(time.Hour))
	restore = func() { laneUnverifiedAfter.Store(int64(laneProbeAfter)) }
	t.Cleanup(restore)
	return restore
}

//go:build (linux || darwin || dragonfly || freebsd || netbsd || openbsd) && !locksmith_portable

package conn

import "testing"

// trustIdleLane makes pick use an idle lane without checking it for a close by the server, until restore is
// called (or the test ends). The peek of the Unix path answers without changing who reads, so there is nothing
// to do: it is for the portable path, whose check hands the lane to its background reader.
func trustIdleLane(t *testing.T) (restore func()) {
	t.Helper()
	return func() {}
}

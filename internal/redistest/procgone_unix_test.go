//go:build !windows

package redistest

import "syscall"

// processGone reports whether no process has this pid any more.
func processGone(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

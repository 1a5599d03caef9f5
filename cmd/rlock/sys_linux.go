package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// becomeSubreaper makes the supervisor the child subreaper of its descendants (PR_SET_CHILD_SUBREAPER): when the
// command exits, the processes it started become the supervisor's children instead of init's, so the supervisor
// sees each of them exit and no zombie of the group outlives it.
func becomeSubreaper() {
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// selfExecutable returns the path that re-executes this very binary for the supervisor: /proc/self/exe, which
// names the running file even when a package upgrade has replaced or removed it meanwhile.
func selfExecutable() (string, error) {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

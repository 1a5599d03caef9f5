//go:build !windows

package proccpu

import (
	"syscall"
	"time"
)

// Used returns the CPU time (user + system) this process has used so far, or 0 if the system does not say. It
// does not block; safe for concurrent use.
func Used() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build !windows

package timer

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) the process has used. (internal/proccpu has the same; the timer
// imports nothing of the project, its tests included.)
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

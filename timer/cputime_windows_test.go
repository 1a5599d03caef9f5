package timer

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) the process has used. (internal/proccpu has the same; the timer
// imports nothing of the project, its tests included.)
func cpuTime() time.Duration {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0
	}
	var created, exited, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return 0
	}
	span := func(ft syscall.Filetime) int64 { return int64(ft.HighDateTime)<<32 | int64(ft.LowDateTime) }
	return time.Duration(span(kernel)+span(user)) * 100 // FILETIME durations count 100 ns units
}

package proccpu

import (
	"syscall"
	"time"
)

// Used returns the CPU time (user + system) this process has used so far, or 0 if the system does not say. It
// does not block; safe for concurrent use.
func Used() time.Duration {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0
	}
	var created, exited, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return 0
	}
	return span(kernel) + span(user)
}

// span converts a FILETIME that holds a duration (in 100 ns units) rather than a date: Filetime.Nanoseconds would
// subtract the 1601 epoch.
func span(ft syscall.Filetime) time.Duration {
	return time.Duration(int64(ft.HighDateTime)<<32|int64(ft.LowDateTime)) * 100
}

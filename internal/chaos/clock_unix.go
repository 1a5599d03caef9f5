//go:build !windows

package chaos

import "golang.org/x/sys/unix"

// Now returns the host's CLOCK_MONOTONIC in nanoseconds. Every timestamp in a chaos log is read from it, so that
// records written by different worker processes and fault events written by the orchestrator are comparable: Go's
// own monotonic readings (time.Now, time.Since) are relative to each process's start and cannot be compared across
// processes, and the wall clock can be stepped. A reading costs one clock_gettime call, well under a microsecond.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		// CLOCK_MONOTONIC exists on every Unix the project builds for; failing here would make every interval in
		// the log meaningless, which a panic says more loudly than a zero.
		panic("chaos: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

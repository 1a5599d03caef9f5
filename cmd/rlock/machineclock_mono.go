//go:build linux || darwin || freebsd || openbsd || dragonfly || solaris

package main

import "golang.org/x/sys/unix"

// machineMonotonic reads CLOCK_MONOTONIC in nanoseconds: one clock for every process of the machine, which a step
// of the wall clock (NTP, an administrator, a resumed VM) does not move. rlock passes a fixed lease's kill
// deadline to its supervisor on it, so that such a step cannot delay the SIGKILL past the lease.
func machineMonotonic() (int64, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, false
	}
	return ts.Nano(), true
}

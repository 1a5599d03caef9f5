//go:build unix && !(linux || darwin || freebsd || openbsd || dragonfly || solaris)

package main

// machineMonotonic reports that this system offers no monotonic clock shared by processes through
// golang.org/x/sys/unix: the kill deadline then travels on the wall clock alone.
func machineMonotonic() (int64, bool) { return 0, false }

// Package proccpu reads the CPU time the current process has used, for the benchmarks' "client cores" figures:
// getrusage(RUSAGE_SELF) on Unix, GetProcessTimes on Windows. Both count every thread, the Go runtime's included,
// in user and system mode.
package proccpu

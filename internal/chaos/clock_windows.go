package chaos

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// The performance counter is Windows' system-wide monotonic clock: readings of different processes compare.
var (
	kernel32 = windows.NewLazySystemDLL("kernel32.dll")
	qpc      = kernel32.NewProc("QueryPerformanceCounter")
	qpf      = kernel32.NewProc("QueryPerformanceFrequency")
)

// Now returns the host's monotonic clock in nanoseconds (the performance counter on Windows). Every timestamp in a
// chaos log is read from it, so that records written by different worker processes and fault events written by the
// orchestrator are comparable: Go's own monotonic readings are relative to each process's start, and the wall
// clock can be stepped.
func Now() int64 {
	var ticks, freq int64
	if r, _, err := qpf.Call(uintptr(unsafe.Pointer(&freq))); r == 0 || freq <= 0 {
		panic("chaos: QueryPerformanceFrequency: " + err.Error())
	}
	if r, _, err := qpc.Call(uintptr(unsafe.Pointer(&ticks))); r == 0 {
		panic("chaos: QueryPerformanceCounter: " + err.Error())
	}
	return ticks/freq*1e9 + ticks%freq*1e9/freq // split so that ticks*1e9 cannot overflow
}

package redistest

import "syscall"

// Windows has no job-control signals (os.Process.Signal accepts only Kill there, and says so in its error), so
// Pause and Resume fail on Windows. The numbers are those of SIGSTOP and SIGCONT on Linux, for the error text.
const (
	sigPause  = syscall.Signal(0x13)
	sigResume = syscall.Signal(0x12)
)

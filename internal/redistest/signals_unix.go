//go:build !windows

package redistest

import "syscall"

// The job-control signals behind Pause and Resume.
const (
	sigPause  = syscall.SIGSTOP
	sigResume = syscall.SIGCONT
)

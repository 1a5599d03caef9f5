//go:build linux

package chaos

import "syscall"

// sysProcAttr makes the kernel SIGKILL a worker when the orchestrator's thread that started it dies, so workers
// never outlive a crashed run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

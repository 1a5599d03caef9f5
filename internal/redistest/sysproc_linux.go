//go:build linux

package redistest

import "syscall"

// sysProcAttr makes the kernel SIGKILL the child when the thread that started
// it dies, so servers never outlive a crashed test binary. (Go threads only
// exit when a goroutine locked with runtime.LockOSThread returns without
// unlocking, which redistest never does.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

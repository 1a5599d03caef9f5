//go:build !linux

package chaos

import "syscall"

// sysProcAttr has no parent-death signal outside Linux: workers of an orchestrator that crashes there may keep
// running until their own deadline.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

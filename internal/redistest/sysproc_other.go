//go:build !linux

package redistest

import "syscall"

// sysProcAttr has no parent-death signal outside Linux: a test binary that
// crashes there may leave its servers running.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

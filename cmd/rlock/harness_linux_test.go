package main

import "syscall"

// harnessProcAttr starts rlock in a session of its own (no controlling terminal, its own process group) and has
// the kernel kill it if the test binary dies first.
func harnessProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

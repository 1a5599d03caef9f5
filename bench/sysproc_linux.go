package main

import "syscall"

// caseSysProcAttr makes a case process die with the orchestrator (SIGKILL on
// the parent's death), so an interrupted run leaves no process behind.
func caseSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

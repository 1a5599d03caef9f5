//go:build unix && !linux

package main

import "syscall"

// harnessProcAttr starts rlock in a session of its own (no controlling terminal, its own process group). Only
// Linux can tie its life to the test binary's.
func harnessProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

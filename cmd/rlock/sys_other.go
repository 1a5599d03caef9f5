//go:build !linux

package main

import (
	"os"
	"syscall"
)

// childSysProcAttr returns nil: only Linux can tie the command's life to rlock's (Pdeathsig).
func childSysProcAttr() *syscall.SysProcAttr { return nil }

// fromTerminal reports false: every caught signal is forwarded. (The terminal-group check uses Linux's ioctl
// numbers; on other systems a Ctrl-C may reach the command twice.)
func fromTerminal(os.Signal) bool { return false }

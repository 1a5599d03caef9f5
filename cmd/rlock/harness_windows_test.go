package main

import "syscall"

// harnessProcAttr has nothing to set on Windows (no sessions, no parent-death signal).
func harnessProcAttr() *syscall.SysProcAttr { return nil }

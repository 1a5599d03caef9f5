package main

import (
	"os"
	"syscall"
	"unsafe"
)

// childSysProcAttr makes the kernel send the command SIGTERM if rlock dies first (SIGKILL, OOM killer): without
// rlock nothing renews the lock, so the command must not go on believing it holds it. The command stays in rlock's
// process group, so it keeps the terminal (it can read from it and gets the terminal's signals). Pdeathsig fires
// when the thread that started the child exits: exec locks its goroutine to its thread while the command runs.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// fromTerminal reports whether s was, in all likelihood, sent by the terminal to rlock's whole process group (Ctrl-C
// is SIGINT, Ctrl-\ is SIGQUIT): rlock is in the foreground process group of its controlling terminal. The command
// shares that group, so it got the signal too, and forwarding it would deliver it twice (many programs take a
// second Ctrl-C as "force quit"). A SIGINT sent with kill to rlock alone while it runs in the foreground of a
// terminal is therefore not forwarded; send it to the command, or to the process group (kill -INT -PGID).
func fromTerminal(s os.Signal) bool {
	if s != syscall.SIGINT && s != syscall.SIGQUIT {
		return false
	}
	tty, err := os.Open("/dev/tty") // the controlling terminal; fails (ENXIO) when there is none (cron, systemd)
	if err != nil {
		return false
	}
	defer tty.Close()
	var pgrp int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, tty.Fd(), syscall.TIOCGPGRP,
		uintptr(unsafe.Pointer(&pgrp))); errno != 0 {
		return false
	}
	return int(pgrp) == syscall.Getpgrp()
}

//go:build unix

package main

import (
	"os"
	"syscall"
)

// forwardedSignals are the signals rlock catches. While the command runs, each is passed on to its process group.
// While rlock waits for the lock, SIGINT, SIGTERM, SIGHUP and SIGQUIT make it give up (exit 128+N); SIGUSR1 and
// SIGUSR2 are ignored, as there is nobody to pass them to yet.
var forwardedSignals = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
}

// jobControlSignals are caught by exec besides forwardedSignals: SIGCONT, which a shell sends to rlock's job on fg
// or bg, and which rlock passes on to the command's group (giving it the terminal on fg).
var jobControlSignals = []os.Signal{syscall.SIGCONT}

// isContinue reports whether s is SIGCONT.
func isContinue(s os.Signal) bool { return s == syscall.SIGCONT }

// signalNames are the names sigName knows.
var signalNames = map[syscall.Signal]string{
	syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGKILL: "SIGKILL", syscall.SIGPIPE: "SIGPIPE",
	syscall.SIGABRT: "SIGABRT", syscall.SIGSEGV: "SIGSEGV", syscall.SIGCONT: "SIGCONT", syscall.SIGSTOP: "SIGSTOP",
	syscall.SIGTSTP: "SIGTSTP", syscall.SIGTTIN: "SIGTTIN", syscall.SIGTTOU: "SIGTTOU",
}

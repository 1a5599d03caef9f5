//go:build !unix

package main

import (
	"os"
	"syscall"
)

// forwardedSignals are the signals rlock catches: Ctrl-C and Ctrl-Break, and a console's close. While rlock waits
// for the lock they make it give up; while the command runs, they are passed on as far as the system allows.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// jobControlSignals is empty: there is no job control.
var jobControlSignals []os.Signal

// isContinue reports false: there is no SIGCONT.
func isContinue(os.Signal) bool { return false }

// signalNames are the names sigName knows.
var signalNames = map[syscall.Signal]string{
	syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGKILL: "SIGKILL", syscall.SIGPIPE: "SIGPIPE", syscall.SIGABRT: "SIGABRT", syscall.SIGSEGV: "SIGSEGV",
}

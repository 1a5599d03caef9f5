package main

import (
	"context"
	"os"
	"strconv"
	"syscall"
)

// forwardedSignals are the signals rlock catches. While the command runs, each is passed on to it. While rlock
// waits for the lock, SIGINT, SIGTERM, SIGHUP and SIGQUIT make it give up (exit 128+N); SIGUSR1 and SIGUSR2 are
// ignored, as there is nobody to pass them to yet.
var forwardedSignals = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, sigUSR1, sigUSR2,
}

// givesUp reports whether s ends a wait for the lock.
func givesUp(s os.Signal) bool {
	switch s {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT:
		return true
	}
	return false
}

// sigName returns the conventional name of s ("SIGTERM").
func sigName(s os.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case sigUSR1:
		return "SIGUSR1"
	case sigUSR2:
		return "SIGUSR2"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	}
	if n, ok := s.(syscall.Signal); ok {
		return "signal " + strconv.Itoa(int(n))
	}
	return s.String()
}

// sigCode returns 128+N for signal N, the status a shell reports for a process killed by it.
func sigCode(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return exitSignalBase + int(n)
	}
	return exitSignalBase
}

// interruptible runs fn with a context that is cancelled when a signal that gives up a wait arrives on sigs. It
// returns that signal (nil when none came) and fn's error. fn must return soon after its context is cancelled; a
// result it produced anyway (a lock granted just as the signal came) is the caller's to undo.
func interruptible(sigs <-chan os.Signal, fn func(ctx context.Context) error) (os.Signal, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	// Owner: interruptible. Exits when fn returns, which the cancellation bounds; always received below.
	go func() { done <- fn(ctx) }()
	for {
		select {
		case err := <-done:
			return nil, err
		case s := <-sigs:
			if !givesUp(s) {
				continue
			}
			cancel()
			return s, <-done
		}
	}
}

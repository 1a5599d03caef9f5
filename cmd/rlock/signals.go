package main

import (
	"context"
	"os"
	"strconv"
	"syscall"
)

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
	if n, ok := s.(syscall.Signal); ok {
		if name, ok := signalNames[n]; ok {
			return name
		}
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

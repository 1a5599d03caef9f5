//go:build (linux || dragonfly || freebsd || netbsd || openbsd) && !locksmith_portable

package conn

import "syscall"

// bellSocketpair returns a connected pair of Unix stream sockets, both close-on-exec (atomically: a child process
// started meanwhile by another goroutine never inherits them).
func bellSocketpair() ([2]int, error) {
	return syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
}

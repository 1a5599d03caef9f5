//go:build darwin && !locksmith_portable

package conn

import "syscall"

// bellSocketpair returns a connected pair of Unix stream sockets, both close-on-exec. macOS has no SOCK_CLOEXEC,
// so, as the standard library does there, the flag is set under syscall.ForkLock: a child process started
// meanwhile by another goroutine never inherits the sockets.
func bellSocketpair() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return fds, err
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	return fds, nil
}

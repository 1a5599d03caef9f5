//go:build (linux || darwin || dragonfly || freebsd || netbsd || openbsd) && !locksmith_portable

package conn

import "syscall"

// writeDirect writes on the socket from the calling goroutine (a non-blocking fd). pconn calls it with its mutex
// held and only while the connection is open; OnClose marks the connection closed under that mutex before gnet
// closes the descriptor, so the descriptor is valid here. Any error (EAGAIN, a broken pipe) reports 0 bytes
// written: the loop then writes the bytes itself and, if the socket is broken, closes the connection.
func (t *gnetTransport) writeDirect(b []byte) (int, bool) {
	n, err := syscall.Write(t.fd, b)
	if err != nil || n < 0 {
		return 0, true
	}
	return n, true
}

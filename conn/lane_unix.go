//go:build (linux || darwin || dragonfly || freebsd || netbsd || openbsd) && !locksmith_portable

package conn

import (
	"io"
	"syscall"
	"time"
)

// laneAlive is pick's check of the idle lane pc (laneReader.alive); best, the event-loop connection pick would
// take otherwise, matters only on the portable path.
func laneAlive(pc, _ *pconn) bool { return pc.lane.alive(pc) }

// alive reports whether the idle lane can take a command: true unless the server closed it while nobody was
// reading (see laneProbeAfter), in which case the lane is reset (its keeper reconnects) and false is returned. pick
// calls it; it does not block.
func (l *laneReader) alive(pc *pconn) bool {
	if time.Duration(int64(time.Since(laneEpoch))-l.lastTurn.Load()) < laneProbeAfter || l.fd < 0 {
		return true
	}
	l.mu.Lock()
	unread := l.role == roleNone
	l.mu.Unlock()
	if !unread {
		return true // a reader is on the socket and would have seen the close
	}
	// The descriptor stays valid while the connection is open; if it closed meanwhile (and the number was
	// reused), a peek consumes nothing and the send that follows fails on the closed connection anyway.
	var b [1]byte
	n, _, err := syscall.Recvfrom(l.fd, b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	switch {
	case err == syscall.EAGAIN || err == syscall.EINTR || n > 0:
		return true // nothing to read, or a reply of a command another caller just sent
	case err == nil:
		err = io.EOF
	}
	pc.reset("read", err)
	return false
}

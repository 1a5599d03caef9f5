//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd) || locksmith_portable

package conn

import (
	"sync/atomic"
	"time"
)

// laneUnverifiedAfter is how long the lane may go unread before alive stops trusting it: laneProbeAfter. A
// variable only so that tests which count the lane's round trips can keep a loaded machine's pauses from sending
// commands elsewhere (trustIdleLane).
var laneUnverifiedAfter atomic.Int64

func init() { laneUnverifiedAfter.Store(int64(laneProbeAfter)) }

// laneAlive is pick's check of the idle lane pc (laneReader.alive); best, the event-loop connection pick would take
// otherwise, matters only on the Unix path's signature.
func laneAlive(pc, _ *pconn) bool { return pc.lane.alive(pc) }

// alive reports whether the idle lane can take a command now. Nobody reads a lane in roleNone, and without a
// non-blocking peek (Windows has none that Go's netpoller tolerates on its sockets) the only portable way to learn
// that the server closed it is to read it. So a lane unread for laneProbeAfter is handed to its background reader,
// whose Read returns at once if the server closed the socket (the lane is then reset and its keeper reconnects),
// and this command goes to an event-loop connection (false). The next commands find a reader on the socket and
// use the lane (true); the background reader gives the read role back to the first Get that drives, once its
// reply is read, so a sequential caller pays one hand-off per pause instead of a peek. The unchecked lane is not
// used even when no event-loop connection is open: a command written on a socket the server closed fails with
// ErrConnLost (it may have run), where pick's other answers (a connection attempt, or ErrUnavailable: never
// sent) leave no doubt. pick calls it; it does not block.
func (l *laneReader) alive(_ *pconn) bool {
	if time.Duration(int64(time.Since(laneEpoch))-l.lastTurn.Load()) < time.Duration(laneUnverifiedAfter.Load()) {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.role != roleNone {
		return true // a reader is on the socket and sees a close
	}
	l.startBackgroundLocked()
	return false
}

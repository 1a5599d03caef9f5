package conn

import (
	"errors"
	"math"
)

// pool spreads commands over a few connections to one server.
type pool struct {
	keepers []*keeper // the event-loop connections; immutable after newNode
	lane    *keeper   // the latency lane, or nil; immutable after newNode
	all     []*keeper // keepers and lane
}

// pick returns the connection for the next command:
//
//   - the latency lane, when it and every other connection have nothing in flight: a sequential caller's command
//     then takes the Go-netpoller path, the fastest round trip (see "Latency lane" in doc.go); a lane unread for a
//     while is first probed for a close by the server (laneReader.alive);
//   - else the open event-loop connection with the fewest commands queued or in flight (least-pending: a
//     connection stuck behind a slow reply stops receiving work), ties to the lowest, so a caller keeps a warm
//     connection;
//   - else the lane if it is open, else the least loaded connection still connecting (its commands are written
//     once the handshake is done).
//
// nil means no connection is usable: the server is unreachable and the caller fails fast (see "Failures" in
// doc.go). Lock-free: a few atomic loads (and, after a pause, the lane's probe).
func (p *pool) pick() *pconn {
	var best, connecting *pconn
	bestN, connectingN := int32(math.MaxInt32), int32(math.MaxInt32)
	idle := true
	for _, s := range p.keepers {
		pc := s.cur.Load()
		if pc == nil {
			continue
		}
		n := pc.inflight.Load()
		switch connState(pc.st.Load()) {
		case stateOpen:
			if n < bestN {
				best, bestN = pc, n
			}
			if n != 0 {
				idle = false
			}
		case stateConnecting:
			if n < connectingN {
				connecting, connectingN = pc, n
			}
		}
	}
	if p.lane != nil && (idle || best == nil) {
		if pc := p.lane.cur.Load(); pc != nil && pc.isOpen() && (pc.inflight.Load() == 0 || best == nil) &&
			(pc.lane == nil || laneAlive(pc, best)) {
			return pc
		}
	}
	if best != nil {
		return best
	}
	return connecting
}

// unavailable builds the error of a command issued while no connection is usable, wrapping the most recent cause.
func (p *pool) unavailable() error {
	var cause error
	for _, s := range p.all {
		if err := s.unavailable(); err != nil {
			cause = err
			break
		}
	}
	var ce *ConnError
	if errors.As(cause, &ce) {
		cause = ce.Err
	}
	return unavailableError(p.keepers[0].currentAddr(), "connect", cause)
}

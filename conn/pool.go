package conn

import (
	"errors"
	"math"
	"sync"
)

// node is everything the Client keeps per server: a pool of command connections and, once something subscribes,
// a pub/sub connection. Topologies route commands to nodes: today one standalone node; cluster (slot routing,
// MOVED/ASK) and sentinel (master switch) add a routing layer above nodes without changing the Client's API.
type node struct {
	addr string
	pool pool

	psMu   sync.Mutex // guards the fields below
	ps     *pubsub    // created by the first Subscribe
	closed bool
}

// newNode creates a node with PoolSize slots, plus the latency lane on plain TCP unless disabled; nothing is
// dialled yet.
func newNode(cl *Client, addr string) *node {
	n := &node{addr: addr}
	n.pool.addr = addr
	for range cl.cfg.PoolSize {
		n.pool.slots = append(n.pool.slots, &slot{cl: cl, addr: addr})
	}
	n.pool.all = n.pool.slots
	if cl.cfg.TLS == nil && !cl.cfg.DisableLatencyLane {
		n.pool.lane = &slot{cl: cl, addr: addr, lane: true}
		n.pool.all = append(n.pool.all[:len(n.pool.all):len(n.pool.all)], n.pool.lane)
	}
	return n
}

// pubsub returns the node's pub/sub state, creating it (and starting its connection) on first use; nil once the
// node is closed.
func (n *node) pubsub(cl *Client) *pubsub {
	n.psMu.Lock()
	defer n.psMu.Unlock()
	if n.ps == nil && !n.closed {
		n.ps = newPubsub(cl, n.addr)
	}
	return n.ps
}

// close closes every connection of the node.
func (n *node) close() {
	for _, s := range n.pool.all {
		s.close()
	}
	n.psMu.Lock()
	ps := n.ps
	n.closed = true
	n.psMu.Unlock()
	if ps != nil {
		ps.close()
	}
}

// pool spreads commands over a few connections to one server.
type pool struct {
	addr  string
	slots []*slot // the event-loop connections; immutable after newNode
	lane  *slot   // the latency lane, or nil; immutable after newNode
	all   []*slot // slots and lane
}

// pick returns the connection for the next command:
//
//   - the latency lane, when it and every other connection have nothing in flight: a sequential caller's command
//     then takes the Go-netpoller path, the fastest round trip (see "Latency lane" in doc.go);
//   - else the open event-loop connection with the fewest commands queued or in flight (least-pending: a
//     connection stuck behind a slow reply stops receiving work), ties to the lowest, so a caller keeps a warm
//     connection;
//   - else the lane if it is open, else the least loaded connection still connecting (its commands are written
//     once the handshake is done).
//
// nil means no connection is usable: the server is unreachable and the caller fails fast (see "Failures" in
// doc.go). Lock-free: a few atomic loads.
func (p *pool) pick() *pconn {
	var best, connecting *pconn
	bestN, connectingN := int32(math.MaxInt32), int32(math.MaxInt32)
	idle := true
	for _, s := range p.slots {
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
		if pc := p.lane.cur.Load(); pc != nil && pc.isOpen() && (pc.inflight.Load() == 0 || best == nil) {
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
	return unavailableError(p.addr, "connect", cause)
}

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

// newNode creates a node with PoolSize slots; nothing is dialled yet.
func newNode(cl *Client, addr string) *node {
	n := &node{addr: addr}
	n.pool.addr = addr
	n.pool.slots = make([]*slot, cl.cfg.PoolSize)
	for i := range n.pool.slots {
		n.pool.slots[i] = &slot{cl: cl, addr: addr}
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
	for _, s := range n.pool.slots {
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
	slots []*slot // immutable after newNode
}

// pick returns the open connection with the fewest commands queued or in flight (the least-pending choice: a
// connection stuck behind a slow reply stops receiving new commands), or, if none is open, the least loaded one
// still connecting (its commands are written once the handshake is done). Ties go to the lowest slot, which keeps
// a sequential caller on one warm connection. nil means no connection is usable: the server is unreachable and
// the caller fails fast (see "Commands while disconnected" in doc.go). Lock-free: a few atomic loads.
func (p *pool) pick() *pconn {
	var best, connecting *pconn
	bestN, connectingN := int32(math.MaxInt32), int32(math.MaxInt32)
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
		case stateConnecting:
			if n < connectingN {
				connecting, connectingN = pc, n
			}
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
	for _, s := range p.slots {
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

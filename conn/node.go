package conn

import (
	"errors"
	"sync"
)

// endpoint is what the connections of a node need to (re)connect, shared by its keepers: the dial and handshake
// configuration, whether ROLE must say master (a Sentinel Client's data nodes), and the topology layer that takes
// back refused commands (nil for a standalone Client and for connections to Sentinels).
type endpoint struct {
	cfg      *Config
	master   bool
	rt       rerouter
	sentinel bool // connections to Sentinels (Event.Role)
}

// node is everything the Client keeps per server: a pool of command connections and, once something subscribes,
// a pub/sub connection. A standalone Client has one node; a Sentinel Client one node that follows the master
// (retarget); a cluster Client one node per master, created and retired by topology refreshes.
type node struct {
	ep   *endpoint
	pool pool

	psMu   sync.Mutex // guards the fields below; taken after registry.mu when both are
	addr   string     // where the node's connections go (a Sentinel Client moves it to a new master)
	ps     *pubsub    // created by the first Subscribe
	closed bool
}

// newNode creates a node with PoolSize keepers, plus the latency lane on plain TCP unless disabled; nothing is
// dialled yet.
func newNode(cl *Client, addr string, ep *endpoint) *node {
	n := &node{ep: ep, addr: addr}
	for range cl.cfg.PoolSize {
		n.pool.keepers = append(n.pool.keepers, &keeper{cl: cl, ep: ep, addr: addr})
	}
	n.pool.all = n.pool.keepers
	if cl.cfg.TLS == nil && !cl.cfg.DisableLatencyLane {
		n.pool.lane = &keeper{cl: cl, ep: ep, addr: addr, lane: true}
		n.pool.all = append(n.pool.all[:len(n.pool.all):len(n.pool.all)], n.pool.lane)
	}
	return n
}

// dialAll starts the first connection of every keeper, each on a goroutine counted in wg (the caller waits: New).
func (n *node) dialAll(wg *sync.WaitGroup) {
	for _, s := range n.pool.all {
		s.mu.Lock()
		pc := s.newConnLocked()
		s.mu.Unlock()
		wg.Add(1)
		go func() { // owner: the caller of dialAll (New), which waits for wg
			defer wg.Done()
			s.dial(pc)
		}()
	}
}

// start makes the node's first connections: in the background when lazy, else dialled in parallel and waited for
// (New), returning the error of the node when none connected.
func (n *node) start(lazy bool) error {
	if lazy {
		n.connectAll()
		return nil
	}
	var dials sync.WaitGroup
	n.dialAll(&dials)
	dials.Wait()
	if n.pool.pick() == nil {
		return n.pool.unavailable()
	}
	return nil
}

// noAddress records why the node has no address yet (a lazy Sentinel Client whose first query failed): the error
// of its commands until retarget gives it one.
func (n *node) noAddress(cause error) {
	var ce *ConnError
	if errors.As(cause, &ce) {
		cause = ce.Err
	}
	for _, s := range n.pool.all {
		s.mu.Lock()
		s.lastErr = cause
		s.mu.Unlock()
	}
}

// connectAll starts the first connection of every keeper in the background (a node created by a topology change).
func (n *node) connectAll() {
	for _, s := range n.pool.all {
		s.mu.Lock()
		if !s.closed {
			s.connectLocked()
		}
		s.mu.Unlock()
	}
}

// pubsub returns the node's pub/sub connection state, creating it (and starting its connection) on first use;
// nil once the node is closed. sharded selects SSUBSCRIBE.
func (n *node) pubsub(cl *Client, sharded bool) *pubsub {
	n.psMu.Lock()
	defer n.psMu.Unlock()
	if n.addr == "" {
		return nil // a lazy Sentinel Client that has not found the master yet
	}
	if n.ps == nil && !n.closed {
		n.ps = newPubsub(cl, cl.reg, n.addr, n.ep, sharded)
	}
	return n.ps
}

// up reports whether the node has an open command connection.
func (n *node) up() bool {
	for _, s := range n.pool.keepers {
		if pc := s.cur.Load(); pc != nil && pc.isOpen() {
			return true
		}
	}
	return false
}

// retarget moves every connection of the node to addr (a Sentinel Client's new master): commands in flight on the
// old connections fail with a *ConnError matching ErrConnLost whose cause is ErrMasterSwitched, and each keeper
// dials addr at once; the pub/sub connection resubscribes its channels there (KindResubscribed).
func (n *node) retarget(addr string) bool {
	n.psMu.Lock()
	if n.closed || n.addr == addr {
		n.psMu.Unlock()
		return false
	}
	n.addr = addr
	ps := n.ps
	n.psMu.Unlock()
	for _, s := range n.pool.all {
		s.retarget(addr)
	}
	if ps != nil {
		ps.keeper.retarget(addr)
	}
	return true
}

// currentAddr returns where the node's connections go.
func (n *node) currentAddr() string {
	n.psMu.Lock()
	defer n.psMu.Unlock()
	return n.addr
}

// close closes every connection of the node. Commands pending on it fail with ErrClosed (cause nil: the Client is
// closing) or with a *ConnError matching ErrConnLost that wraps cause (the node left the topology).
func (n *node) close(cause error) {
	for _, s := range n.pool.all {
		s.close(cause)
	}
	n.psMu.Lock()
	ps := n.ps
	n.closed = true
	n.psMu.Unlock()
	if ps != nil {
		ps.keeper.close(cause)
	}
}

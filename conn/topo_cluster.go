package conn

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/locksmith-go/locksmith/timer"
)

// cluster is the slot map of a cluster Client and its nodes, one per master. Routing reads the map lock-free
// (an atomic pointer per slot); refreshes, MOVED replies and node creation take mu.
type cluster struct {
	c   *Client
	ep  *endpoint // shared by every node's connections
	ref *refresher
	// sharded: channels use SSUBSCRIBE, scripts SPUBLISH. Probed by New, or (LazyConnect with no seed answering)
	// by the first refresh that gets a map, before it creates any node; written once.
	sharded atomic.Bool
	probed  bool // sharded is known; owned by New, then by the refresh (one at a time)

	useShards atomic.Bool // CLUSTER SHARDS works and is allowed (else CLUSTER SLOTS)
	// refusal is the error of the last slot-map fetch when the servers refused it (credentials or ACL), nil once
	// one succeeds: commands and subscriptions that find no node fail with it at once instead of retrying.
	refusal atomic.Pointer[ConnError]
	slots   [SlotCount]atomic.Pointer[node]
	masters atomic.Pointer[[]*node] // the nodes serving slots, for keyless commands
	rr      atomic.Uint32           // round robin over masters
	failing atomic.Bool             // the last refresh failed (its warning is logged once per outage)

	mu      sync.Mutex // guards the fields below
	nodes   map[string]*node
	retired map[*node]*timer.Timeout // nodes out of the map, closed after a grace period
	known   []string                 // every node address of the last map (masters and replicas)
	// uncovered remembers the master a slot had before a map left it without one (a failover in progress), so
	// that the map that covers it again reports the failover event.
	uncovered map[int]*node
	seeds     []string
	closed    bool
}

// startCluster is New for a cluster: read the slot map from the first seed that answers (probing CLUSTER SHARDS and
// sharded pub/sub), create a node per master and dial them all, and start the periodic refresh.
func (c *Client) startCluster() error {
	cl := &cluster{c: c, nodes: map[string]*node{}, retired: map[*node]*timer.Timeout{}, seeds: c.cfg.ClusterAddrs}
	cl.useShards.Store(true)
	c.rt = newRouter(c, cl)
	cl.ep = &endpoint{cfg: &c.cfg, rt: c.rt}
	cl.ref = &refresher{c: c, run: cl.refresh, period: c.cfg.TopologyRefreshInterval}
	c.reg = newRegistry(cl.routePubsub, cl.movedPubsub)
	c.reg.noRoute = cl.noNodeErr

	var t *slotMap
	var errs []error
	for _, seed := range cl.seeds {
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.DialTimeout)
		top, sharded, err := cl.fetchFrom(ctx, seed, true)
		cancel()
		if errors.Is(err, ErrInvalidConfig) {
			return err
		}
		if err == nil {
			t, cl.probed = top, true
			cl.sharded.Store(sharded && !c.cfg.DisableShardedPubSub)
			break
		}
		errs = append(errs, err)
	}
	if t == nil {
		err := unavailableError("", "cluster", errors.Join(append([]error{errors.New("no seed node gave the slot map")}, errs...)...))
		if !c.cfg.LazyConnect {
			return err
		}
		// Lazily: commands find no node and retry within RetryTimeout (or fail at once with a refusal); refreshes
		// ask the seeds until one answers.
		if refused(err) {
			cl.refusal.Store(err)
			cl.failing.Store(true)
			c.cfg.Logger.Error("conn: the cluster's seeds refused the connection; fix the configuration or the ACL",
				"error", err)
		} else {
			c.cfg.Logger.Warn("conn: no cluster seed answered; retrying in the background", "error", err)
		}
		cl.ref.start()
		cl.ref.trigger()
		return nil
	}
	if c.cfg.LazyConnect {
		cl.apply(t, nil) // the nodes connect in the background
		cl.ref.start()
		return nil
	}
	var dials sync.WaitGroup
	cl.apply(t, &dials)
	dials.Wait()
	up := false
	for _, n := range cl.nodeList() {
		up = up || n.up()
	}
	if !up {
		if n := cl.nodeFor(-1); n != nil {
			return n.pool.unavailable()
		}
		return unavailableError("", "cluster", errors.New("the slot map names no master"))
	}
	cl.ref.start()
	return nil
}

// nodeFor returns the node serving slot, or any master for slot -1 and for a slot the map does not cover (its
// reply will redirect); nil before the first map.
func (cl *cluster) nodeFor(slot int) *node {
	if slot >= 0 {
		if n := cl.slots[slot].Load(); n != nil {
			return n
		}
	}
	ms := cl.masters.Load()
	if ms == nil || len(*ms) == 0 {
		return nil
	}
	return (*ms)[int(cl.rr.Add(1)%uint32(len(*ms)))]
}

// noNode is topology.noNode.
func (cl *cluster) noNode() error { return cl.noNodeErr() }

// noNodeErr is the error of a command or subscription that finds no node (no slot map yet): the servers' refusal
// of the last slot-map query, which no retry will change, else an unavailability worth retrying.
func (cl *cluster) noNodeErr() error {
	if e := cl.refusal.Load(); e != nil {
		return e
	}
	return unavailableError("", "connect", errors.New("no cluster node known"))
}

// routesBySlot is topology.routesBySlot: a cluster routes each command to the node of its key's slot.
func (cl *cluster) routesBySlot() bool { return true }

// redirect is topology.redirect: the node at addr (created when the map did not know it), recorded as slot's
// owner for a MOVED.
func (cl *cluster) redirect(slot int, addr string, moved bool) *node {
	n := cl.nodeAt(addr)
	if n != nil && moved {
		cl.moved(slot, n)
	}
	return n
}

// requestRefresh is topology.requestRefresh.
func (cl *cluster) requestRefresh() { cl.ref.trigger() }

// nodeAt returns the node for addr (a MOVED or ASK target), creating it (and starting its connections) when the
// map did not know it yet; nil once the Client is closing.
func (cl *cluster) nodeAt(addr string) *node {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.closed {
		return nil
	}
	n := cl.nodes[addr]
	if n == nil {
		n = newNode(cl.c, addr, cl.ep)
		cl.nodes[addr] = n
		n.connectAll()
	}
	return n
}

// moved records a MOVED reply: slot now lives on n. A full refresh follows (the other slots of a migration or a
// failover moved too).
func (cl *cluster) moved(slot int, n *node) {
	if cl.slots[slot].Swap(n) != n {
		cl.ref.trigger()
	}
}

// routePubsub is the registry's route: the pub/sub connection of the node serving the channel's slot.
func (cl *cluster) routePubsub(name string) *pubsub {
	n := cl.nodeFor(KeySlot(name))
	if n == nil {
		return nil
	}
	return n.pubsub(cl.c, cl.sharded.Load())
}

// movedPubsub is the registry's moved: a (S)SUBSCRIBE refused with MOVED goes to the node the reply names.
func (cl *cluster) movedPubsub(msg string) *pubsub {
	slot, addr, ok := parseRedirect(msg)
	if !ok {
		return nil
	}
	n := cl.nodeAt(addr)
	if n == nil {
		return nil
	}
	cl.moved(slot, n)
	return n.pubsub(cl.c, cl.sharded.Load())
}

// apply installs a slot map: a node per master (created and dialled when new: into dials when given, else in the
// background), every slot pointing at its master's node, nodes that serve no slot retired (closed after a grace
// period, so that replies in flight still arrive), then channels moved to their slot's node. It reports whether
// any slot changed node.
func (cl *cluster) apply(t *slotMap, dials *sync.WaitGroup) (changed bool) {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return false
	}
	active := map[string]*node{}
	var masters []*node
	var covered [SlotCount]bool
	moves := map[[2]*node]bool{} // slots taken from one node by another, for failover events
	for _, sh := range t.shards {
		if sh.master == "" || len(sh.ranges) == 0 {
			continue
		}
		n := cl.nodes[sh.master]
		if n == nil {
			n = newNode(cl.c, sh.master, cl.ep)
			cl.nodes[sh.master] = n
			if dials != nil {
				n.dialAll(dials)
			} else {
				n.connectAll()
			}
		}
		if active[sh.master] == nil {
			active[sh.master] = n
			masters = append(masters, n)
		}
		for _, r := range sh.ranges {
			for s := r[0]; s <= r[1]; s++ {
				covered[s] = true
				if old := cl.slots[s].Swap(n); old != n {
					changed = true
					if old == nil {
						old = cl.uncovered[s]
					}
					delete(cl.uncovered, s)
					if old != nil && old != n {
						moves[[2]*node{old, n}] = true
					}
				}
			}
		}
	}
	for s := range covered {
		if covered[s] {
			continue
		}
		if old := cl.slots[s].Swap(nil); old != nil {
			changed = true
			if cl.uncovered == nil {
				cl.uncovered = map[int]*node{}
			}
			cl.uncovered[s] = old
		}
	}
	var closeNow []*node
	for addr, n := range cl.nodes {
		if active[addr] == nil {
			delete(cl.nodes, addr)
			if !cl.retireLocked(n) {
				closeNow = append(closeNow, n)
			}
		}
	}
	cl.masters.Store(&masters)
	cl.known = t.addrs()
	cl.mu.Unlock()
	for m := range moves {
		if prev := m[0].currentAddr(); active[prev] == nil {
			// The old master left the map: a failover, not a migration between masters.
			cl.c.emit(Event{Kind: EventFailover, Addr: m[1].currentAddr(), Prev: prev})
		}
	}
	cl.c.reg.sweep()
	for _, n := range closeNow {
		n.close(ErrNodeRemoved)
	}
	return changed
}

// retiree closes a retired node when its grace period ends (timer.Task).
type retiree struct {
	cl *cluster
	n  *node
}

func (r retiree) Run(*timer.Timeout) {
	cl := r.cl
	cl.mu.Lock()
	if _, ok := cl.retired[r.n]; !ok {
		cl.mu.Unlock()
		return
	}
	delete(cl.retired, r.n)
	cl.mu.Unlock()
	r.n.close(ErrNodeRemoved)
}

// retireLocked schedules n's close after ResponseTimeout: replies in flight there (MOVED, mostly) still arrive;
// whatever is left then fails with a *ConnError wrapping ErrNodeRemoved. Its channels move by the sweep that
// follows. It reports false when the timer refuses (it is stopped): the caller closes n at once, after unlocking
// (completions run callbacks, which may route commands).
func (cl *cluster) retireLocked(n *node) bool {
	cl.c.cfg.Logger.Info("conn: cluster node left the slot map", "addr", n.currentAddr())
	to, err := cl.c.tm.NewTimeout(retiree{cl, n}, cl.c.cfg.ResponseTimeout)
	if err != nil {
		return false
	}
	cl.retired[n] = to
	return true
}

// refresh is the refresher's run: fetch the map and apply it; while a master has no open connection, refresh
// again soon.
func (cl *cluster) refresh() {
	t, sharded, err := cl.fetch(!cl.probed)
	if err != nil {
		if cl.c.ctx.Err() == nil {
			level := slog.LevelDebug // warn once per outage
			if cl.failing.CompareAndSwap(false, true) {
				level = slog.LevelWarn
			}
			if refused(err) {
				ce := unavailableError("", "cluster", err)
				if cl.refusal.Swap(ce) == nil {
					level = slog.LevelError // someone must fix the configuration or the ACL: say so loudly, once
				}
			}
			cl.c.cfg.Logger.Log(cl.c.ctx, level, "conn: cluster topology refresh failed", "error", err)
		}
		cl.ref.stillDegraded()
		return
	}
	cl.refusal.Store(nil)
	cl.failing.Store(false)
	if !cl.probed {
		cl.probed = true
		cl.sharded.Store(sharded && !cl.c.cfg.DisableShardedPubSub)
	}
	if cl.apply(t, nil) {
		cl.c.rt.kick() // retries waiting for this change go now
	}
	if cl.suspects(t) > 0 {
		cl.ref.stillDegraded()
		return
	}
	cl.ref.healthy()
}

// suspects counts the masters of t whose node the Client has and cannot reach: a map naming them is stale (a
// failover in progress) or the server is down.
func (cl *cluster) suspects(t *slotMap) int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	n := 0
	for _, sh := range t.shards {
		if nd := cl.nodes[sh.master]; nd != nil && len(sh.ranges) > 0 && !nd.up() {
			n++
		}
	}
	return n
}

// nodeList returns the nodes of the map.
func (cl *cluster) nodeList() []*node {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	out := make([]*node, 0, len(cl.nodes))
	for _, n := range cl.nodes {
		out = append(out, n)
	}
	return out
}

// close stops the refreshes and closes every node (pending commands fail with ErrClosed).
func (cl *cluster) close() {
	cl.ref.close()
	cl.mu.Lock()
	cl.closed = true
	var all []*node
	for _, n := range cl.nodes {
		all = append(all, n)
	}
	for n, to := range cl.retired {
		to.Cancel()
		all = append(all, n)
	}
	cl.nodes, cl.retired = map[string]*node{}, map[*node]*timer.Timeout{}
	cl.mu.Unlock()
	for _, n := range all {
		n.close(nil)
	}
}

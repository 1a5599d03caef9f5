package conn

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/timer"
)

// maxMoves bounds the MOVED and ASK redirections one command follows between two delayed retries (the map should
// settle after one or two); past it the last MOVED or ASK error reaches the caller.
const maxMoves = 16

// Delays of the retries after TRYAGAIN, CLUSTERDOWN, LOADING, READONLY or an unreachable node: retryMinDelay
// doubling up to retryMaxDelay, for at most Config.RetryTimeout in all (and the command's context). A topology
// change (a new slot map, a new master) sends the waiting ones at once (router.kick).
const (
	retryMinDelay = 10 * time.Millisecond
	retryMaxDelay = 100 * time.Millisecond
)

// retryDelay returns the delay before delayed retry number n+1 and the total waited before it.
func retryDelay(n int) (d, waited time.Duration) {
	d = retryMinDelay
	for range n {
		waited += d
		d = min(2*d, retryMaxDelay)
	}
	return d, waited
}

// rerouter is the routing layer as the connections below it see it: what a pipelined connection (pconn) and the
// keeper that redials it need from the router of a Sentinel or cluster Client. A standalone Client's connections
// have none (nil), which keeps interface calls off their hot path; every method here serves a command that went
// wrong or a connection that was lost.
type rerouter interface {
	// reroute takes the commands that one reader turn found refused without being run (MOVED, ASK, TRYAGAIN,
	// CLUSTERDOWN, LOADING, READONLY) and sends them again, at once or after a delay. Called on the reader without
	// pconn.mu; never blocks.
	reroute(rs []*resend)
	// retryLater takes a command that was never written (its connection never opened) and sends it again after a
	// backoff, within Config.RetryTimeout. Never blocks.
	retryLater(r *resend)
	// crossSlot reports whether the servers are a cluster, whose CROSSSLOT error replies become a *CrossSlotError.
	crossSlot() bool
	// topologyChanged asks for a topology refresh (rate-limited): a connection was lost. Never blocks.
	topologyChanged()
}

// topology is the deployment behind a router: a Redis Cluster (cluster) or a master found through Sentinel
// (sentinel). The router asks it where each command goes and tells it when its view looks stale. Safe for
// concurrent use; nothing here blocks.
type topology interface {
	// routesBySlot reports whether commands go to the node of their key's hash slot (a cluster; see commandSlot)
	// rather than all to one node. (The router computes the slot itself: passing a caller's keys and args through
	// an interface call would make them escape, an allocation per command.)
	routesBySlot() bool
	// nodeFor returns the node serving slot (-1: any); nil while no node is known.
	nodeFor(slot int) *node
	// noNode is the error of a command that finds no node (nodeFor nil): one matching ErrUnavailable, or the
	// servers' refusal (ErrAuth, ErrInvalidConfig) when that is why no node is known, so that it is not retried.
	noNode() error
	// redirect returns the node a MOVED (moved true) or ASK reply names for slot, and records a MOVED; nil when the
	// redirection cannot be followed (not a cluster, or closing).
	redirect(slot int, addr string, moved bool) *node
	// requestRefresh asks for the topology to be read again, rate-limited.
	requestRefresh()
	// close stops the refreshes and closes every node; commands pending on them fail with ErrClosed. It blocks
	// until the nodes are closed, not for refreshes in progress (the Client waits for those).
	close()
}

var (
	_ rerouter = (*router)(nil)
	_ topology = (*cluster)(nil)
	_ topology = (*sentinel)(nil)
)

// router is the routing layer of a Sentinel or cluster Client, between the Client's methods and its nodes: it
// picks the node of each command (asking the topology), sends again what the servers refused without running it
// (see refusal), retries commands whose node is unreachable, and asks for topology refreshes when errors say the
// topology's view is stale.
type router struct {
	c       *Client
	topo    topology     // immutable
	bySlot  bool         // topo.routesBySlot(); immutable
	retries *timer.Group // retries waiting on the wheel; close fails them with ErrClosed
}

// newRouter returns the router of c over topo.
func newRouter(c *Client, topo topology) *router {
	return &router{c: c, topo: topo, bySlot: topo.routesBySlot(), retries: timer.NewGroup(c.tm)}
}

// slotOf returns the hash slot a command is routed by: commandSlot's on a cluster, -1 (any node) elsewhere.
func (rt *router) slotOf(s *Script, keys, args []string, routeKey string) (int, error) {
	if !rt.bySlot {
		return -1, nil
	}
	return commandSlot(s, keys, args, routeKey)
}

// nodeFor returns the node serving slot (-1: any); nil while the topology knows no node.
func (rt *router) nodeFor(slot int) *node { return rt.topo.nodeFor(slot) }

// topologyChanged asks for a topology refresh, rate-limited; it never blocks.
func (rt *router) topologyChanged() { rt.topo.requestRefresh() }

// crossSlot reports whether the topology is a cluster.
func (rt *router) crossSlot() bool { return rt.bySlot }

// do sends one command of a Sentinel or cluster Client: route, send, or take the retry path when its node has no
// usable connection. p or op is the caller's result (op for SendAndWait); routeKey overrides the command's key.
func (rt *router) do(p *future.Promise[resp.Value], op *syncOp, stop func() bool, s *Script, keys, args []string,
	routeKey string) {
	slot, err := rt.slotOf(s, keys, args, routeKey)
	if err != nil {
		if stop != nil {
			stop()
		}
		failEntry(p, op, err)
		return
	}
	e := pending{p: p, op: op, kind: kindUser, stop: stop, slot: int16(slot)}
	if op != nil {
		e.gen = op.nextGen()
	}
	n := rt.nodeFor(slot)
	if n != nil {
		for range len(n.pool.all) + 1 {
			pc := n.pool.pick()
			if pc == nil {
				break
			}
			if pc.send(context.Background(), e, s, keys, args) == nil { // e.stop watches ctx
				return
			}
		}
	}
	last := rt.topo.noNode()
	if n != nil {
		last = n.pool.unavailable()
	}
	e.script = s // so that a NOSCRIPT reply to the resend is handled like any EVALSHA's
	rt.retryLater(&resend{e: e, raw: appendCmd(nil, s, keys, args), kind: unreachable, last: last})
}

// reroute takes the refused commands of one reader turn (on the reader, after the connection's mutex is released):
// MOVED and ASK are sent to their target at once; the others wait on the wheel. Never blocks.
func (rt *router) reroute(rs []*resend) {
	for _, r := range rs {
		switch r.kind {
		case refuseMoved, refuseAsk:
			slot, addr, ok := parseRedirect(r.refusal)
			if !ok || int(r.e.moves) >= maxMoves {
				r.giveUp()
				continue
			}
			n := rt.topo.redirect(slot, addr, r.kind == refuseMoved)
			if n == nil {
				if rt.c.closed.Load() {
					r.last = ErrClosed // a redirection that arrives after Close ends the command as Close does
				}
				r.giveUp()
				continue
			}
			r.e.moves++
			rt.sendTo(r, n, r.kind == refuseAsk)
		case refuseDown, refuseReadOnly:
			rt.topologyChanged()
			rt.retryLater(r)
		default:
			rt.retryLater(r)
		}
	}
}

// sendTo sends r on n (after ASKING when asking); if n has no usable connection, r waits for a retry.
func (rt *router) sendTo(r *resend, n *node, asking bool) {
	if r.e.done() {
		if r.e.stop != nil {
			r.e.stop()
		}
		return
	}
	for range len(n.pool.all) + 1 {
		pc := n.pool.pick()
		if pc == nil {
			break
		}
		if pc.sendRaw(r.e, r.raw, asking) == nil {
			return
		}
	}
	r.kind, r.last = unreachable, n.pool.unavailable()
	rt.retryLater(r)
}

// retryLater schedules r's next attempt on the wheel after its backoff delay, or gives up when the next attempt
// would start past Config.RetryTimeout (the caller's context may end first: the retry then finds the future done).
// An unreachable node also asks for a topology refresh.
func (rt *router) retryLater(r *resend) {
	if r.e.done() {
		if r.e.stop != nil {
			r.e.stop()
		}
		return
	}
	if r.kind == unreachable {
		if refused(r.last) {
			// The server refused the connection's credentials or configuration: no retry will change that.
			r.giveUp()
			return
		}
		rt.topologyChanged()
	}
	d, waited := retryDelay(int(r.e.waits))
	if r.e.waits == 255 || waited+d > rt.c.cfg.RetryTimeout {
		r.giveUp()
		return
	}
	r.e.waits++
	// The redirection budget is per attempt: a slot being migrated answers ASK, then TRYAGAIN after ASKING, for as
	// long as the migration lasts, and each such cycle waits here. Counting its ASKs against maxMoves gave up after
	// ~16 cycles (~1.4 s) instead of within RetryTimeout, which bounds the waits.
	r.e.moves = 0
	err := rt.retries.After(d, func(closed bool) {
		if closed {
			r.last = ErrClosed
			r.giveUp()
			return
		}
		rt.retry(r)
	})
	if err != nil {
		if errors.Is(err, timer.ErrGroupClosed) {
			r.last = ErrClosed
		}
		r.giveUp()
	}
}

// kick sends every waiting retry now instead of at the end of its delay: the topology just changed (a new map, a
// new master), so they have somewhere to go. Never blocks.
func (rt *router) kick() { rt.retries.RunNow() }

// retry routes r again by its slot and sends it (or schedules the next retry). On the timer's worker or the
// goroutine of kick; never blocks.
func (rt *router) retry(r *resend) {
	n := rt.nodeFor(int(r.e.slot))
	if n == nil {
		r.kind, r.last = unreachable, rt.topo.noNode()
		rt.retryLater(r)
		return
	}
	rt.sendTo(r, n, false)
}

// pipelineNode routes a Pipeline: every command with a key must map to one node (else ErrCrossNode); keyless
// commands follow them. It fills es[i].slot. nil when the topology knows no node.
func (rt *router) pipelineNode(cmds []Cmd, es []pending) (*node, error) {
	var n *node
	for i := range cmds {
		slot, err := rt.slotOf(cmds[i].Script, cmds[i].Keys, cmds[i].Args, cmds[i].RouteKey)
		if err != nil {
			return nil, err
		}
		es[i].slot = int16(slot)
		if slot < 0 {
			continue
		}
		m := rt.topo.nodeFor(slot)
		if n == nil {
			n = m
		} else if m != n {
			return nil, ErrCrossNode
		}
	}
	if n == nil {
		n = rt.topo.nodeFor(-1)
	}
	return n, nil
}

// close closes the topology (its refreshes and nodes), then fails every waiting retry with ErrClosed; later retries
// fail at once. Client.Close calls settleRetries again once its goroutines have exited.
func (rt *router) close() {
	rt.topo.close()
	rt.settleRetries()
}

// settleRetries fails every waiting retry with ErrClosed, and makes later ones fail at once.
func (rt *router) settleRetries() { rt.retries.Close() }

// parseRedirect parses "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381".
func parseRedirect(s string) (slot int, addr string, ok bool) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return 0, "", false
	}
	slot, err := strconv.Atoi(f[1])
	if err != nil || slot < 0 || slot >= SlotCount {
		return 0, "", false
	}
	addr = f[2]
	if strings.HasPrefix(addr, ":") {
		// An empty host (a node that does not know its own address): Redis means "the address you used".
		return slot, "", false
	}
	return slot, addr, true
}

// commandSlot returns the hash slot a cluster command is routed by (-1: any node): routeKey when set, else the
// first key (a script's keys[0], or the key commandKey finds in args). A script whose keys are in different slots
// fails with a *CrossSlotError before anything is sent. Allocates nothing unless it fails.
func commandSlot(s *Script, keys, args []string, routeKey string) (int, error) {
	if routeKey != "" {
		return KeySlot(routeKey), nil
	}
	if s == nil {
		if k, ok := commandKey(args); ok {
			return KeySlot(k), nil
		}
		return -1, nil
	}
	if len(keys) == 0 {
		return -1, nil
	}
	slot := KeySlot(keys[0])
	for _, k := range keys[1:] {
		if ks := KeySlot(k); ks != slot {
			// Copies, so that the caller's keys do not escape through the error.
			return 0, &CrossSlotError{Keys: [2]string{strings.Clone(keys[0]), strings.Clone(k)}, Slots: [2]int{slot, ks}}
		}
	}
	return slot, nil
}

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

// refusal is a server reply meaning that the command was not run and may be sent again.
type refusal uint8

const (
	refuseNone     refusal = iota
	refuseMoved            // MOVED slot addr: the slot lives elsewhere for good; update the map and send there
	refuseAsk              // ASK slot addr: this one command goes to addr, preceded by ASKING (slot migration)
	refuseTryAgain         // TRYAGAIN: a multi-key command during a migration; retry after a short wait
	refuseDown             // CLUSTERDOWN: the cluster cannot serve the slot now (failover in progress)
	refuseLoading          // LOADING: the server is loading its data set
	refuseReadOnly         // READONLY: a replica (an old master, demoted); the Sentinels know the new master
	unreachable            // not a reply: the command's node had no usable connection, so it was never sent
)

// refusalOf classifies an error reply.
func refusalOf(v *resp.Value) refusal {
	s := v.Str
	switch {
	case strings.HasPrefix(s, "MOVED "):
		return refuseMoved
	case strings.HasPrefix(s, "ASK "):
		return refuseAsk
	case strings.HasPrefix(s, "TRYAGAIN"):
		return refuseTryAgain
	case strings.HasPrefix(s, "CLUSTERDOWN"):
		return refuseDown
	case strings.HasPrefix(s, "LOADING"):
		return refuseLoading
	case strings.HasPrefix(s, "READONLY"):
		return refuseReadOnly
	}
	return refuseNone
}

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

// resend is a caller's command taken back from a connection because the server refused it without running it, or
// because it was never sent: its entry (promise or syncOp, context stop, slot, counters) and its encoded bytes.
// The router sends it again, at once (MOVED, ASK) or after a delay on the timer wheel.
type resend struct {
	e       pending
	raw     []byte
	kind    refusal
	refusal string // the refusal's text (MOVED slot addr, ...), "" for unreachable
	last    error  // what the caller gets if the retries run out
}

// router is the topology layer of a Sentinel or cluster Client, between the Client's methods and its nodes: it
// picks the node of each command, sends again what the servers refused without running (see refusal), retries
// commands whose node is unreachable, and asks for topology refreshes when errors say the map is stale.
type router struct {
	c        *Client
	cluster  *cluster  // cluster mode
	sentinel *sentinel // Sentinel mode

	retries *timer.Group // retries waiting on the wheel; close fails them with ErrClosed
}

// nodeFor returns the node serving slot (-1: any); nil when the cluster knows no node yet.
func (rt *router) nodeFor(slot int) *node {
	if rt.cluster != nil {
		return rt.cluster.nodeFor(slot)
	}
	return rt.c.node
}

// topologyChanged asks for a topology refresh (cluster) or a Sentinel query, rate-limited; it never blocks.
func (rt *router) topologyChanged() {
	if rt.cluster != nil {
		rt.cluster.ref.trigger()
	} else {
		rt.sentinel.ref.trigger()
	}
}

// do sends one command of a Sentinel or cluster Client: route, send, or take the retry path when its node has no
// usable connection. p or op is the caller's result (op for SendAndWait); routeKey overrides the command's key.
func (rt *router) do(p *future.Promise[resp.Value], op *syncOp, stop func() bool, s *Script, keys, args []string,
	routeKey string) {
	slot := -1
	if rt.cluster != nil {
		var err error
		if slot, err = commandSlot(s, keys, args, routeKey); err != nil {
			if stop != nil {
				stop()
			}
			failEntry(p, op, err)
			return
		}
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
	var last error = ErrUnavailable
	if n != nil {
		last = n.pool.unavailable()
	}
	e.script = s // so that a NOSCRIPT reply to the resend is handled like any EVALSHA's
	rt.retryLater(&resend{e: e, raw: appendCmd(nil, s, keys, args), kind: unreachable, last: last})
}

// failEntry fails a caller's result.
func failEntry(p *future.Promise[resp.Value], op *syncOp, err error) {
	if op != nil {
		op.fail(err)
		return
	}
	p.Fail(err)
}

// giveUp completes r's caller with r.last (the refusal, or the unavailability) and unregisters its context.
func (r *resend) giveUp() {
	if r.e.stop != nil {
		r.e.stop()
	}
	failEntry(r.e.p, r.e.op, r.last)
}

// reroute takes the refused commands of one reader turn (on the reader, after the connection's mutex is released):
// MOVED and ASK are sent to their target at once; the others wait on the wheel. Never blocks.
func (rt *router) reroute(rs []*resend) {
	for _, r := range rs {
		switch r.kind {
		case refuseMoved, refuseAsk:
			slot, addr, ok := parseRedirect(r.refusal)
			if !ok || rt.cluster == nil || int(r.e.moves) >= maxMoves {
				r.giveUp()
				continue
			}
			r.e.moves++
			n := rt.cluster.nodeAt(addr)
			if r.kind == refuseMoved {
				rt.cluster.moved(slot, n)
			}
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
		r.kind = unreachable
		rt.retryLater(r)
		return
	}
	rt.sendTo(r, n, false)
}

// close fails every waiting retry with ErrClosed; later retries fail at once.
func (rt *router) close() { rt.retries.Close() }

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

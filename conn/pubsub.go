package conn

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// MessageKind says what a Message reports.
type MessageKind int

const (
	// KindMessage is a payload published on the channel.
	KindMessage MessageKind = iota
	// KindResubscribed says that the pub/sub connection was re-established and the channel subscribed again:
	// messages published while it was down are lost, so re-check the state the messages are about.
	KindResubscribed
)

// Message is one event delivered to a Handler.
type Message struct {
	Kind    MessageKind // what happened
	Channel string      // the channel it happened on
	Payload string      // the published payload (KindMessage only)
}

// Handler receives a channel's messages. It runs on the reader goroutine of the pub/sub connection that read the
// message, in the order messages arrived, and MUST NOT block: hand work off with a non-blocking channel send or a
// future. A handler that panics is recovered and logged.
type Handler func(Message)

// Subscription is one handler's subscription to one channel, returned by Client.Subscribe.
type Subscription struct {
	reg    *registry
	ch     *channel
	h      Handler
	closed atomic.Bool
}

// Channel returns the subscribed channel's name.
func (s *Subscription) Channel() string { return s.ch.name }

// Close removes the handler: it receives nothing after Close returns (unless it is running concurrently on the
// loop). When it was the channel's last handler, UNSUBSCRIBE (SUNSUBSCRIBE) is sent. Idempotent, non-blocking, safe
// for concurrent use.
func (s *Subscription) Close() {
	if !s.closed.CompareAndSwap(false, true) {
		return
	}
	s.reg.unsubscribe(s)
}

// channel is the client-side state of one subscribed channel. Guarded by registry.mu.
type channel struct {
	name      string
	ps        *pubsub         // the node connection it is subscribed (or being subscribed) on
	subs      []*Subscription // confirmed handlers; replaced, never modified in place, so dispatch can use a snapshot
	waiting   []waiter        // Subscribe calls waiting for the server's confirmation
	confirmed bool            // subscribed on ps's current connection
	sentOn    *pconn          // the connection a SUBSCRIBE for this channel was last queued on
}

type waiter struct {
	p   *future.Promise[*Subscription]
	sub *Subscription
}

// registry holds the subscriptions of a Client (or of one Sentinel watcher): every channel, with the node
// connection (pubsub) it is subscribed on. One registry spans all the nodes of a cluster, so that a channel can move
// from node to node (slot migration, failover) under one mutex, keeping its handlers and waiters.
type registry struct {
	mu     sync.Mutex // guards everything here and in the channels; taken before any pconn.mu and node.psMu
	chans  map[string]*channel
	closed bool

	// route returns the node connection a new channel is subscribed on: the node's (standalone, Sentinel), or the
	// node serving the channel's slot (cluster). nil when there is none.
	route func(name string) *pubsub
	// moved returns where a channel refused with "MOVED slot addr" belongs (cluster), or nil.
	moved func(msg string) *pubsub
	// noRoute, when set, is the error of a subscription that route found no connection for (cluster: the
	// servers' refusal of the slot map, when that is why); else it matches ErrUnavailable.
	noRoute func() error
}

func newRegistry(route func(string) *pubsub, moved func(string) *pubsub) *registry {
	return &registry{chans: make(map[string]*channel), route: route, moved: moved}
}

// pubsub is one node's dedicated subscription connection (RESP2 needs one: a subscribed connection accepts only
// (UN)SUBSCRIBE and PING). Every (S)SUBSCRIBE names one channel, so each has exactly one confirmation, and they
// complete in FIFO order like any command; messages are pushed in between and dispatched. Sharded connections
// (cluster, Redis 7) use SSUBSCRIBE and SUNSUBSCRIBE; the server also sends sunsubscribe unasked when the slot leaves
// the node, so SUNSUBSCRIBE confirmations are treated as pushes and SUNSUBSCRIBE queues no entry.
type pubsub struct {
	cl      *Client
	reg     *registry
	keeper  *keeper
	sharded bool
	resubOn *pconn // the connection EventResubscribed was last told for; guarded by reg.mu
}

// newPubsub creates the connection state and starts its connection to addr.
func newPubsub(cl *Client, reg *registry, addr string, ep *endpoint, sharded bool) *pubsub {
	ps := &pubsub{cl: cl, reg: reg, sharded: sharded}
	ps.keeper = &keeper{cl: cl, ep: ep, addr: addr, ps: ps}
	ps.keeper.mu.Lock()
	ps.keeper.connectLocked()
	ps.keeper.mu.Unlock()
	return ps
}

// subscribe implements Client.Subscribe.
func (r *registry) subscribe(name string, h Handler) *future.Future[*Subscription] {
	p := future.NewPromise[*Subscription]()
	sub := &Subscription{reg: r, h: h}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		p.Fail(ErrClosed)
		return p.Future()
	}
	ch := r.chans[name]
	if ch != nil && ch.confirmed {
		sub.ch = ch
		ch.subs = append(slices.Clip(ch.subs), sub)
		r.mu.Unlock()
		p.Succeed(sub)
		return p.Future()
	}
	ps := r.route(name)
	if ch != nil {
		ps = ch.ps
	}
	if ps == nil {
		r.mu.Unlock()
		if r.noRoute != nil {
			p.Fail(r.noRoute())
		} else {
			p.Fail(unavailableError("", "connect", nil))
		}
		return p.Future()
	}
	pc := ps.keeper.cur.Load()
	if pc == nil || !pc.usable() {
		r.mu.Unlock()
		p.Fail(ps.unavailable())
		return p.Future()
	}
	if ch != nil && ch.sentOn == pc {
		// A SUBSCRIBE is already queued or in flight on the current connection: wait for its confirmation.
		sub.ch = ch
		ch.waiting = append(ch.waiting, waiter{p, sub})
		r.mu.Unlock()
		return p.Future()
	}
	if ch == nil {
		ch = &channel{name: name, ps: ps}
		r.chans[name] = ch
	}
	sub.ch = ch
	ch.waiting = append(ch.waiting, waiter{p, sub})
	kind := kindSubscribe
	if len(ch.subs) > 0 {
		// Handlers from before a reconnect are still waiting to be told of the resubscription.
		kind = kindResubscribe
	}
	if !ps.sendSubscribeLocked(ch, pc, kind) {
		// The connection closed just now; lost() ran or will find nothing for this channel.
		waiters := r.dropWaitersLocked(ch)
		r.mu.Unlock()
		failWaiters(waiters, ps.unavailable())
		return p.Future()
	}
	r.mu.Unlock()
	return p.Future()
}

// sendSubscribeLocked queues (S)SUBSCRIBE for ch on pc and records it; false when pc is closed. r.mu held.
func (ps *pubsub) sendSubscribeLocked(ch *channel, pc *pconn, kind pendingKind) bool {
	cmd := "SUBSCRIBE"
	if ps.sharded {
		cmd = "SSUBSCRIBE"
	}
	ch.sentOn = pc
	if !pc.sendInternal(pending{kind: kind, ch: ch}, cmd, ch.name) {
		ch.sentOn = nil
		return false
	}
	return true
}

// sendUnsubscribeLocked queues (S)UNSUBSCRIBE for ch on ps's connection, if it is usable. r.mu held.
func (ps *pubsub) sendUnsubscribeLocked(ch *channel) {
	pc := ps.keeper.cur.Load()
	if pc == nil || !pc.usable() {
		return
	}
	if ps.sharded {
		pc.sendUntracked("SUNSUBSCRIBE", ch.name)
		return
	}
	pc.sendInternal(pending{kind: kindUnsubscribe, ch: ch}, "UNSUBSCRIBE", ch.name)
}

// unsubscribe removes s; the last handler of a channel sends UNSUBSCRIBE.
func (r *registry) unsubscribe(s *Subscription) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := s.ch
	if r.chans[ch.name] != ch {
		return
	}
	if i := slices.Index(ch.subs, s); i >= 0 {
		ch.subs = slices.Delete(slices.Clone(ch.subs), i, i+1)
	}
	if len(ch.subs) > 0 || len(ch.waiting) > 0 {
		return
	}
	delete(r.chans, ch.name)
	ch.ps.sendUnsubscribeLocked(ch)
}

// resubscribe queues SUBSCRIBE for every channel of ps on its new connection (sent after its handshake). Their
// confirmations tell the channels' handlers KindResubscribed.
func (ps *pubsub) resubscribe(pc *pconn) {
	r := ps.reg
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ch := range r.chans {
		if ch.ps != ps {
			continue
		}
		ch.confirmed = false
		if ch.sentOn == pc {
			continue
		}
		ps.sendSubscribeLocked(ch, pc, kindResubscribe)
	}
}

// moveLocked moves ch to the node connection to (a slot that moved, a node that failed): UNSUBSCRIBE where it was,
// SUBSCRIBE on to, whose confirmation completes its waiters and tells its handlers KindResubscribed. When to's
// connection is down, its next connection subscribes it (resubscribe). r.mu held.
func (r *registry) moveLocked(ch *channel, to *pubsub) {
	old := ch.ps
	if old == to {
		return
	}
	if ch.sentOn != nil && ch.sentOn == old.keeper.cur.Load() {
		old.sendUnsubscribeLocked(ch)
	}
	ch.ps, ch.confirmed, ch.sentOn = to, false, nil
	if pc := to.keeper.cur.Load(); pc != nil && pc.usable() {
		to.sendSubscribeLocked(ch, pc, kindResubscribe)
	}
}

// sweep moves every channel whose route changed (after a topology refresh) to its new node connection.
func (r *registry) sweep() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	for _, ch := range r.chans {
		if to := r.route(ch.name); to != nil && to != ch.ps {
			r.moveLocked(ch, to)
		}
	}
}

// confirm handles the reply to a SUBSCRIBE or UNSUBSCRIBE read on pc, on the reader.
func (ps *pubsub) confirm(pc *pconn, e *pending, v *resp.Value) {
	if e.kind == kindUnsubscribe {
		return
	}
	r := ps.reg
	ch := e.ch
	r.mu.Lock()
	if r.chans[ch.name] != ch || ch.sentOn != pc {
		r.mu.Unlock() // unsubscribed or moved meanwhile
		return
	}
	if v.Type == resp.ErrorReply {
		if r.moved != nil && refusalOf(v) == refuseMoved {
			if to := r.moved(v.Str); to != nil && to != ch.ps {
				r.moveLocked(ch, to)
				r.mu.Unlock()
				return
			}
		}
		waiters := r.dropWaitersLocked(ch)
		r.mu.Unlock()
		failWaiters(waiters, v.Err())
		return
	}
	var notify []*Subscription
	event := false
	if e.kind == kindResubscribe {
		notify = ch.subs // a snapshot: subs is replaced, never modified in place
		event = ps.resubOn != pc
		ps.resubOn = pc
	}
	waiters := ch.waiting
	ch.waiting = nil
	if len(waiters) > 0 {
		subs := slices.Clone(ch.subs)
		for _, w := range waiters {
			subs = append(subs, w.sub)
		}
		ch.subs = subs
	}
	ch.confirmed = true
	r.mu.Unlock()

	for _, w := range waiters {
		ps.completeSafe(w.p, w.sub, nil)
	}
	if event {
		ps.cl.emit(Event{Kind: EventResubscribed, Addr: pc.addr, Role: ps.keeper.role()})
	}
	for _, s := range notify {
		ps.deliver(s, Message{Kind: KindResubscribed, Channel: ch.name})
	}
}

// lost handles a SUBSCRIBE whose connection pc closed before the confirmation. If the channel was already queued
// again on the replacement connection (resubscribe runs before the old entries fail), its waiters wait for that
// confirmation; otherwise they fail with err, and the channel is forgotten unless it has confirmed handlers (which
// the next connection subscribes again).
func (ps *pubsub) lost(pc *pconn, e *pending, err error) {
	r := ps.reg
	r.mu.Lock()
	ch := e.ch
	if r.chans[ch.name] != ch || ch.sentOn != pc {
		r.mu.Unlock()
		return
	}
	waiters := r.dropWaitersLocked(ch)
	r.mu.Unlock()
	failWaiters(waiters, err)
}

// dropped marks every channel of ps unconfirmed when its connection closes, so that a Subscribe in the meantime
// waits for the resubscription instead of being told it is subscribed.
func (ps *pubsub) dropped() {
	r := ps.reg
	r.mu.Lock()
	for _, ch := range r.chans {
		if ch.ps == ps {
			ch.confirmed = false
		}
	}
	r.mu.Unlock()
}

// shardDropped handles a sunsubscribe the server sent unasked on pc: the channel's slot left the node (migrated, or
// the node was demoted). SSUBSCRIBE is sent again on the same node, whose MOVED reply moves the channel to the
// slot's new node (confirm); its confirmation tells the handlers KindResubscribed.
func (ps *pubsub) shardDropped(pc *pconn, name string) {
	r := ps.reg
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := r.chans[name]
	if ch == nil || ch.ps != ps || ch.sentOn != pc || !ch.confirmed {
		return // our own SUNSUBSCRIBE's confirmation, or a channel already being subscribed again
	}
	ch.confirmed = false
	ps.sendSubscribeLocked(ch, pc, kindResubscribe)
}

// dropWaitersLocked takes the channel's waiters, forgets the channel if nothing else holds it, and returns them.
func (r *registry) dropWaitersLocked(ch *channel) []waiter {
	waiters := ch.waiting
	ch.waiting = nil
	ch.confirmed = false
	ch.sentOn = nil
	if len(ch.subs) == 0 {
		delete(r.chans, ch.name)
	}
	return waiters
}

func failWaiters(ws []waiter, err error) {
	for _, w := range ws {
		w.p.Fail(err)
	}
}

// isPush reports whether a frame read on the pub/sub connection is a pushed message rather than a reply.
func (ps *pubsub) isPush(v *resp.Value) bool {
	if v.Type != resp.Array || len(v.Elems) < 3 {
		return false
	}
	switch v.Elems[0].Str {
	case "message", "smessage":
		return len(v.Elems) == 3
	case "pmessage":
		return len(v.Elems) == 4
	case "sunsubscribe":
		return ps.sharded && len(v.Elems) == 3
	}
	return false
}

// dispatch delivers a pushed message to the channel's handlers, on the reader of pc.
func (ps *pubsub) dispatch(pc *pconn, v *resp.Value) {
	name, payload := v.Elems[1].Str, v.Elems[2].Str
	switch {
	case v.Elems[0].Str == "sunsubscribe":
		ps.shardDropped(pc, name)
		return
	case len(v.Elems) == 4: // pmessage pattern channel payload
		name, payload = v.Elems[2].Str, v.Elems[3].Str
	}
	r := ps.reg
	r.mu.Lock()
	var subs []*Subscription
	if ch := r.chans[name]; ch != nil {
		subs = ch.subs
	}
	r.mu.Unlock()
	for _, s := range subs {
		ps.deliver(s, Message{Kind: KindMessage, Channel: name, Payload: payload})
	}
}

// deliver calls one handler, unless its subscription is closed, recovering a panic.
func (ps *pubsub) deliver(s *Subscription, m Message) {
	if s.closed.Load() {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			ps.cl.cfg.Logger.Error("conn: panic in a pub/sub handler (handlers run on the connection's reader)",
				"channel", m.Channel, "panic", r)
		}
	}()
	s.h(m)
}

func (ps *pubsub) completeSafe(p *future.Promise[*Subscription], s *Subscription, err error) {
	defer func() {
		if r := recover(); r != nil {
			ps.cl.cfg.Logger.Error("conn: panic in a future callback (callbacks run on the event loop)", "panic", r)
		}
	}()
	p.Complete(s, err)
}

// unavailable is the error of a Subscribe while the pub/sub connection is down.
func (ps *pubsub) unavailable() error {
	cause := ps.keeper.unavailable()
	if ce, ok := cause.(*ConnError); ok {
		cause = ce.Err
	}
	return unavailableError(ps.keeper.currentAddr(), "connect", cause)
}

// close fails every waiting Subscribe with ErrClosed and forgets every channel.
func (r *registry) close() {
	r.mu.Lock()
	r.closed = true
	var waiters []waiter
	for _, ch := range r.chans {
		waiters = append(waiters, ch.waiting...)
		ch.waiting = nil
	}
	r.chans = map[string]*channel{}
	r.mu.Unlock()
	failWaiters(waiters, ErrClosed)
}

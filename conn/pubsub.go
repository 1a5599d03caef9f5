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

// Handler receives a channel's messages. It runs on the event loop (or the stream reader goroutine) that read the
// message, in the order messages arrived, and MUST NOT block: hand work off with a non-blocking channel send or a
// future. A handler that panics is recovered and logged.
type Handler func(Message)

// Subscription is one handler's subscription to one channel, returned by Client.Subscribe.
type Subscription struct {
	ps     *pubsub
	ch     *channel
	h      Handler
	closed atomic.Bool
}

// Channel returns the subscribed channel's name.
func (s *Subscription) Channel() string { return s.ch.name }

// Close removes the handler: it receives nothing after Close returns (unless it is running concurrently on the
// loop). When it was the channel's last handler, UNSUBSCRIBE is sent. Idempotent, non-blocking, safe for concurrent
// use.
func (s *Subscription) Close() {
	if !s.closed.CompareAndSwap(false, true) {
		return
	}
	s.ps.unsubscribe(s)
}

// channel is the client-side state of one subscribed channel. Guarded by pubsub.mu.
type channel struct {
	name      string
	subs      []*Subscription // confirmed handlers; replaced, never modified in place, so dispatch can use a snapshot
	waiting   []waiter        // Subscribe calls waiting for the server's confirmation
	confirmed bool            // subscribed on the current connection
	sentOn    *pconn          // the connection a SUBSCRIBE for this channel was last queued on
}

type waiter struct {
	p   *future.Promise[*Subscription]
	sub *Subscription
}

// pubsub is a node's subscriptions and their dedicated connection (RESP2 needs one: a subscribed connection accepts
// only (UN)SUBSCRIBE and PING). Every SUBSCRIBE and UNSUBSCRIBE names one channel, so each has exactly one
// confirmation and they complete in FIFO order like any command; messages are pushed in between and dispatched.
//
// Sharded pub/sub (SSUBSCRIBE, for cluster) fits the same shape: per-node connections, "ssubscribe"/"smessage"
// kinds; isPush already recognises smessage.
type pubsub struct {
	cl   *Client
	addr string
	slot *slot

	mu     sync.Mutex // guards the fields below; taken before any pconn.mu, never while completing
	chans  map[string]*channel
	closed bool
}

// newPubsub creates the state and starts its connection.
func newPubsub(cl *Client, addr string) *pubsub {
	ps := &pubsub{cl: cl, addr: addr, chans: make(map[string]*channel)}
	ps.slot = &slot{cl: cl, addr: addr, ps: ps}
	ps.slot.mu.Lock()
	ps.slot.connectLocked()
	ps.slot.mu.Unlock()
	return ps
}

// subscribe implements Client.Subscribe.
func (ps *pubsub) subscribe(name string, h Handler) *future.Future[*Subscription] {
	p := future.NewPromise[*Subscription]()
	sub := &Subscription{ps: ps, h: h}
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		p.Fail(ErrClosed)
		return p.Future()
	}
	ch := ps.chans[name]
	if ch != nil && ch.confirmed {
		sub.ch = ch
		ch.subs = append(slices.Clip(ch.subs), sub)
		ps.mu.Unlock()
		p.Succeed(sub)
		return p.Future()
	}
	pc := ps.slot.cur.Load()
	if pc == nil || !pc.usable() {
		ps.mu.Unlock()
		p.Fail(ps.unavailable())
		return p.Future()
	}
	if ch != nil && ch.sentOn == pc {
		// A SUBSCRIBE is already queued or in flight on the current connection: wait for its confirmation.
		sub.ch = ch
		ch.waiting = append(ch.waiting, waiter{p, sub})
		ps.mu.Unlock()
		return p.Future()
	}
	if ch == nil {
		ch = &channel{name: name}
		ps.chans[name] = ch
	}
	sub.ch = ch
	ch.waiting = append(ch.waiting, waiter{p, sub})
	ch.sentOn = pc
	kind := kindSubscribe
	if len(ch.subs) > 0 {
		// Handlers from before a reconnect are still waiting to be told of the resubscription.
		kind = kindResubscribe
	}
	if !pc.sendInternal(pending{kind: kind, ch: ch}, "SUBSCRIBE", name) {
		// The connection closed just now; lost() ran or will find nothing for this channel.
		waiters := ps.dropWaitersLocked(ch)
		ps.mu.Unlock()
		failWaiters(waiters, ps.unavailable())
		return p.Future()
	}
	ps.mu.Unlock()
	return p.Future()
}

// unsubscribe removes s; the last handler of a channel sends UNSUBSCRIBE.
func (ps *pubsub) unsubscribe(s *Subscription) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ch := s.ch
	if ps.chans[ch.name] != ch {
		return
	}
	if i := slices.Index(ch.subs, s); i >= 0 {
		ch.subs = slices.Delete(slices.Clone(ch.subs), i, i+1)
	}
	if len(ch.subs) > 0 || len(ch.waiting) > 0 {
		return
	}
	delete(ps.chans, ch.name)
	if pc := ps.slot.cur.Load(); pc != nil && pc.usable() {
		pc.sendInternal(pending{kind: kindUnsubscribe, ch: ch}, "UNSUBSCRIBE", ch.name)
	}
}

// resubscribe queues SUBSCRIBE for every channel on a new connection (sent after its handshake). Their
// confirmations tell the channels' handlers KindResubscribed.
func (ps *pubsub) resubscribe(pc *pconn) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for name, ch := range ps.chans {
		ch.confirmed = false
		if ch.sentOn == pc {
			continue
		}
		ch.sentOn = pc
		pc.sendInternal(pending{kind: kindResubscribe, ch: ch}, "SUBSCRIBE", name)
	}
}

// confirm handles the reply to a SUBSCRIBE or UNSUBSCRIBE, on the reader.
func (ps *pubsub) confirm(e *pending, v *resp.Value) {
	if e.kind == kindUnsubscribe {
		return
	}
	ch := e.ch
	ps.mu.Lock()
	if ps.chans[ch.name] != ch {
		ps.mu.Unlock() // unsubscribed meanwhile
		return
	}
	if v.Type == resp.ErrorReply {
		waiters := ps.dropWaitersLocked(ch)
		ps.mu.Unlock()
		failWaiters(waiters, v.Err())
		return
	}
	var notify []*Subscription
	if e.kind == kindResubscribe {
		notify = ch.subs // a snapshot: subs is replaced, never modified in place
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
	ps.mu.Unlock()

	for _, w := range waiters {
		ps.completeSafe(w.p, w.sub, nil)
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
	ps.mu.Lock()
	ch := e.ch
	if ps.chans[ch.name] != ch || ch.sentOn != pc {
		ps.mu.Unlock()
		return
	}
	waiters := ps.dropWaitersLocked(ch)
	ps.mu.Unlock()
	failWaiters(waiters, err)
}

// dropped marks every channel unconfirmed when the connection closes, so that a Subscribe in the meantime waits
// for the resubscription instead of being told it is subscribed.
func (ps *pubsub) dropped() {
	ps.mu.Lock()
	for _, ch := range ps.chans {
		ch.confirmed = false
	}
	ps.mu.Unlock()
}

// dropWaitersLocked takes the channel's waiters, forgets the channel if nothing else holds it, and returns them.
func (ps *pubsub) dropWaitersLocked(ch *channel) []waiter {
	waiters := ch.waiting
	ch.waiting = nil
	ch.confirmed = false
	ch.sentOn = nil
	if len(ch.subs) == 0 {
		delete(ps.chans, ch.name)
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
	}
	return false
}

// dispatch delivers a pushed message to the channel's handlers, on the reader.
func (ps *pubsub) dispatch(v *resp.Value) {
	name, payload := v.Elems[1].Str, v.Elems[2].Str
	if len(v.Elems) == 4 { // pmessage pattern channel payload
		name, payload = v.Elems[2].Str, v.Elems[3].Str
	}
	ps.mu.Lock()
	var subs []*Subscription
	if ch := ps.chans[name]; ch != nil {
		subs = ch.subs
	}
	ps.mu.Unlock()
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
			ps.cl.cfg.Logger.Error("conn: panic in a pub/sub handler (handlers run on the event loop)",
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
	cause := ps.slot.unavailable()
	if ce, ok := cause.(*ConnError); ok {
		cause = ce.Err
	}
	return unavailableError(ps.addr, "connect", cause)
}

// close fails every waiting Subscribe with ErrClosed and closes the connection.
func (ps *pubsub) close() {
	ps.mu.Lock()
	ps.closed = true
	var waiters []waiter
	for _, ch := range ps.chans {
		waiters = append(waiters, ch.waiting...)
		ch.waiting = nil
	}
	ps.chans = map[string]*channel{}
	ps.mu.Unlock()
	failWaiters(waiters, ErrClosed)
	ps.slot.close()
}

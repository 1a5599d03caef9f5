package rlock

import (
	"context"
	"time"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// One acquire call in progress, from its start to the caller's future: its first attempt (or its place behind
// this client's waiters, or behind a release of the same owner in flight), each attempt sent and its reply
// settled, and its end: a grant recorded as a hold (or undone), or a failure. The waiter it embeds carries the
// states and their transitions (waiter.go); its part in the server's queue of waiters is in lockqueue.go.

// lockCall is one acquire call in progress: Lock, LockLease or TryLock of any kind of lock, sync or async. The
// caller's future lives inside it: one allocation per acquire call.
type lockCall struct {
	waiter
	p  future.Promise[context.Context]
	lo *lockObject
	// sync is the blocking call this call is part of (syncLockCall), whose Relay is the call's driver: its
	// caller's Get drives each attempt in flight, reading the reply itself over the latency lane instead of parking
	// until an event loop has read it. Nil for an async call, whose attempts are observed with OnComplete as
	// before. Set before the call is shared.
	sync *syncLockCall
	// ctx is the caller's context, kept for the duration of the call only: it becomes the parent of the held
	// context (for its values) when the lock is granted. Its cancellation is watched by its shard's watch of it
	// (ctxwatch.go), which the call joins when it starts.
	ctx   context.Context
	owner string        // <clientUUID>:<ownerID>
	lease time.Duration // the lease a grant gives (also the next head's bound while the lock is held)
	// token is a fenced lock's token of the grant, written before the future completes; while the call waits, and
	// only when nonceMinted, it holds the call's queue nonce instead (lockqueue.go): one word for both keeps the call
	// in its allocation size class, and a call never needs its nonce once granted.
	token    int64
	watchdog bool // the lease is the watchdog's, renewed while held
	fresh    bool // the owner id was made for this call: nobody else can hold anything under it
	// syncMisses counts the call's grants that too few replicas acknowledged (Config.SyncReplicas), each given
	// back. Touched only by the chain reply -> release -> retry, one step at a time.
	syncMisses uint8
	// recyclable: a blocking call granted by its first attempt, which nothing but its caller and its completion
	// ever referenced (no queue, no timer, no retry, no replica wait): its completion releases its reference
	// (recycle.go). Set under the shard mutex with the grant, read by the completion after it.
	recyclable bool
	// refs counts the parties still using a recycled blocking call (recycle.go; syncLockCall). Here, in what
	// would otherwise be padding.
	refs recycleRefs
	// counted is the count of its owner's acquire attempts in flight the call's attempt is part of (serial.go), or
	// nil. Set before the attempt is sent, taken with its reply.
	counted *holdSerial
}

// relay is the call's driver: its blocking call's Relay, or nil.
func (lc *lockCall) relay() *future.Relay {
	if lc.sync == nil {
		return nil
	}
	return &lc.sync.steps
}

// syncLockCall is the lockCall of a blocking call with the Relay its caller's Get drives (lockCall.sync points
// at it): one allocation per call still, and async calls, which need no relay, do not carry it. Most are recycled
// (recycle.go).
//
// Why: a sequential Lock+Unlock parked twice on futures an event loop completed, and waking a parked goroutine
// from an event-loop thread costs 10-60 µs on these VMs (package conn, "Latency lane"). With the relay the
// caller's Get reads each reply itself: measured on a sequential Lock+Unlock, p50 106 µs with the relay against
// 192 µs without (integration's BenchmarkUncontended with one goroutine gives this package's figures).
type syncLockCall struct {
	lockCall
	steps     future.Relay
	onAttempt func(resp.Value, error) // onAnyReply, bound once and kept across reuses (recycle.go)
}

// newLockCall allocates a call: a blocking one carries the Relay its Get drives, set as its future's
// driver before the future is shared.
func newLockCall(blocking bool) *lockCall {
	if !blocking {
		return &lockCall{}
	}
	return &newSyncLockCall().lockCall
}

// start sends lc's first attempt, or queues it behind this client's waiters for the same lock, or waits for a
// release of the same owner in flight. now is a clock reading taken just before (see startLocked).
func (lc *lockCall) start(now time.Duration) {
	sh := lc.sh
	sh.mu.Lock()
	if lc.state != wNew || lc.abandoned != nil {
		// Gone before it began (abandoned while it waited for its owner's release, or closed).
		unwatch := lc.unwatchLocked()
		sh.mu.Unlock()
		if unwatch != nil {
			unwatch()
		}
		return
	}
	lc.watchLocked(lc.ctx)
	reentry := false
	if !lc.fresh {
		key := lc.holdKey()
		if op := sh.releaseAheadLocked(key); op != nil {
			// A release of the same owner is in flight or queued: acquire after it settled, so that its
			// expected count is not changed under it (serial.go).
			op.observed = true // its future outlives the release: not recycled
			sh.mu.Unlock()
			op.p.Future().OnComplete(func(struct{}, error) { lc.start(lc.sh.c.now()) })
			return
		}
		// Re-entry: never queued behind waiters, which would wait for this very owner.
		reentry = sh.holds[key] != nil
	}
	send := lc.startLocked(reentry, now)
	sh.mu.Unlock()
	if send {
		lc.send()
	}
}

// channel is the channel lc waits on: the plain lock's unlock channel, or its kind's.
func (lc *lockCall) channel() string {
	if lc.lo.rules == nil {
		return channelName(lc.lo.name)
	}
	return lc.lo.rules.channel(lc)
}

// send sends one acquire attempt (state wAttempting). Called without the shard mutex, from any goroutine: the
// caller's, an event loop's or a driving Get's (a reply's callback), the timer's worker, a pub/sub handler. It is
// the one place every acquire of every kind goes out, so with Config.SyncReplicas every attempt is followed by
// WAIT (replication.go).
//
// A blocking call's attempt becomes the step its relay forwards to (future.Follow): its caller's Get drives it
// when the Get is driving or has not begun, and once that Get has parked (the call waits for a message or its
// timer) the relay marks the attempt unattended, so that the transport reads the reply by itself. Either way the
// reply is read exactly once and the callback registered once.
func (lc *lockCall) send() {
	if !lc.fresh && !lc.countAttempt() {
		return // sent once the release of the same owner in flight has settled
	}
	if lc.sh.c.synced() {
		lc.sendSynced()
		return
	}
	if lc.lo.rules == nil {
		c := lc.sh.c
		k := plainKeys(lc.lo.name) // on the stack: Eval encodes it at once
		future.Follow(lc.relay(), c.conn.Eval(background, acquireScript, k[:], lc.leaseArg(), lc.owner,
			lc.attemptSpec(), c.pub()), lc.callback())
		return
	}
	s, keys, args := lc.lo.rules.attempt(lc)
	future.Follow(lc.relay(), lc.sh.c.conn.Eval(background, s, keys, args...), lc.callback())
}

func (lc *lockCall) onPlainReply(v resp.Value, err error) {
	sh, counted := lc.sh, lc.takeCounted() // read before settle, after which lc may be recycled
	if err != nil {
		lc.settle(outcome{err: err}, false)
	} else {
		v = sh.c.published(sh, lc.lo.name, v)
		lc.settle(lc.queuedOutcome(parseAcquire(v), v), false)
	}
	sh.attemptSettled(counted)
}

func (lc *lockCall) onReply(v resp.Value, err error) {
	sh, counted := lc.sh, lc.takeCounted() // read before settle, after which lc may be recycled
	if err == nil {
		v = sh.c.published(sh, lc.lo.name, v)
	}
	lc.settle(lc.queuedOutcome(lc.lo.rules.decode(v, err), v), false)
	sh.attemptSettled(counted)
}

// queuedOutcome turns the refusal of an attempt that queues the call on the server (an entry was sent) into a
// queued one: its bound is the one of a waiter queued there (queuedRefusal).
func (lc *lockCall) queuedOutcome(o outcome, v resp.Value) outcome {
	if !lc.serverQueue || o.granted || o.err != nil || lc.noWait || v.Type != resp.Integer {
		return o
	}
	return lc.queuedRefusal(v.Int)
}

// onAnyReply is onPlainReply or onReply, by the kind of lock: the one callback a recycled call binds once.
func (lc *lockCall) onAnyReply(v resp.Value, err error) {
	if lc.lo.rules == nil {
		lc.onPlainReply(v, err)
		return
	}
	lc.onReply(v, err)
}

// callback is onAnyReply as a callback: a blocking call's, bound once, or a new method value.
func (lc *lockCall) callback() func(resp.Value, error) {
	if lc.sync != nil {
		return lc.sync.onAttempt
	}
	return lc.onAnyReply
}

// leaseArg is the call's lease as a script argument, without allocating for the watchdog's.
func (lc *lockCall) leaseArg() string { return lc.sh.c.leaseArg(lc.lease) }

// grantLocked records a grant to lc's owner: a new hold, or a re-entry of the hold it has.
func (lc *lockCall) grantLocked(o outcome) (*hold, error) {
	c := lc.sh.c
	if c.closed.Load() {
		return nil, ErrClosed
	}
	lo := lc.lo
	lc.token = o.token
	lc.recyclable = lc.sync != nil && lc.q == nil && lc.deadline == 0 && lc.retries == 0 && lc.abandoned == nil &&
		!lc.watchHit && lc.syncMisses == 0 && !lc.queued && !c.synced()
	lease := lc.lease
	if o.lease > 0 {
		lease = o.lease // granted by someone else's script, with the call's grant lease
	}
	if h := lc.heldLocked(); h != nil && h.state == holdHeld {
		count := o.count
		if !lc.pinned() || (lc.sh.doubts != nil && lc.sh.doubtOfLocked(h) != 0) {
			// The re-entry adds one to the holds this client's callers believe in. An owner this client made
			// holds through no other client, so a server count above that is a grant nobody holds: that of
			// another attempt of the owner whose caller was told that its outcome is unknown, still in flight
			// (its release, when it fails, expects the recorded count plus that grant), or one whose release could
			// not be confirmed (a doubt, which the Unlock that ends the owner's holds deals with). Recording it
			// would keep the hold held after its callers' last Unlock.
			count = int64(h.count) + 1
		}
		return h, h.reenterLocked(count, lease, lc.watchdog, lc.sentAt)
	}
	if !lc.fresh {
		if prev, ok := lc.ctx.Value(ownerKey{}).(*hold); ok && prev.name == lo.name && prev.kind == lo.kind {
			// A re-entry through a held context of this very lock, which ended while the attempt was in flight (its
			// lease ran out, or it was lost): the caller, who may ignore the context a re-entry returns, would hold
			// a new hold unawares. It fails as the call would have if it had started a moment later, and the grant
			// is given back (undo).
			return nil, context.Canceled
		}
	}
	count := o.count
	if !lc.pinned() {
		// The caller's first hold through this client. More on the server, for an owner this client made, are
		// grants nobody holds (an attempt of the owner whose outcome was unknown to its caller): recording them
		// would keep the hold held after its caller's Unlock. They are doubted instead (their releases failed on
		// the transport, or a grant made to another call of the owner was among them), and the Unlock that ends
		// the owner's holds here releases what is left.
		count = 1
	}
	h, err := c.newHoldLocked(lc.sh, lo.kind, lo.name, lc.owner, lc.ctx, count, lease, lc.watchdog, lc.sentAt)
	if h != nil && lc.watchdog {
		h.lease = lc.lease // what a partial release re-arms: the watchdog's lease, whatever the grant applied
	}
	if h != nil && o.count > count {
		lc.sh.doubtLocked(h, doubtOwned)
	}
	return h, err
}

// heldLocked returns the hold lc's owner has of lc's lock, in any state, or nil. An owner id made for this call
// (fresh) holds nothing but what this call is granted, so it is not looked up. Called with the shard mutex held.
func (lc *lockCall) heldLocked() *hold {
	if lc.fresh {
		return nil
	}
	return lc.sh.holds[holdKey{lc.lo.name, lc.lo.kind.field(lc.owner)}]
}

// succeed completes the call with the held context. If the caller's future was failed meanwhile (context ended
// or wait ran out while the grant was in flight), the lock granted in flight is released instead.
func (lc *lockCall) succeed(o outcome, h *hold) {
	c := lc.sh.c
	var ev AcquiredEvent
	if c.observed {
		ev = AcquiredEvent{Name: lc.lo.name, Owner: lc.owner, Wait: c.now() - lc.startAt, Reentrant: o.count > 1,
			HandOff: o.handoff, Ctx: lc.ctx}
	}
	if !succeed[context.Context](c.log, &lc.p, h) {
		c.unlockHeld(h)
		return
	}
	if c.observed {
		c.obs.Acquired(ev)
	}
	if lc.recyclable {
		lc.refs.releaseLockCall(lc.sync) // the last touch of lc by its completion
	}
}

// fail completes the call with err; a WRONGTYPE reply (the lock's name is used by a key of another type) becomes
// a *NotLockError.
func (lc *lockCall) fail(err error) bool {
	return fail(lc.sh.c.log, &lc.p, notLockError(lc.lo.name, err))
}

// undo releases a grant that no hold records (the client closed meanwhile, the timer refused the hold's timeout,
// or the re-entry's held context ended meanwhile: see grantLocked). After a re-entry of an ended hold of an owner
// this client made, the ended hold's own holds, which the re-entry's lease prolonged and nobody believes in any
// more, are released too.
func (lc *lockCall) undo(o outcome) {
	c := lc.sh.c
	all := false
	if !lc.fresh && c.madeOwner(lc.owner) {
		if prev, ok := lc.ctx.Value(ownerKey{}).(*hold); ok && prev.name == lc.lo.name && prev.kind == lc.lo.kind {
			lc.sh.mu.Lock()
			all = prev.state != holdHeld
			lc.sh.mu.Unlock()
		}
	}
	c.releaseOrphans(lc.lo.kind, lc.lo.name, lc.owner, o.count, max(lc.lease, o.lease), all)
}

// giveBackResult releases the lock a blocking call was granted after it stopped waiting. Another completion won
// the race with the caller's Fail; Peek could still see the future pending (the winner publishes its result just
// after winning), so it waits for the result: it is being stored right now, Get returns at once.
func (lc *lockCall) giveBackResult() {
	if held, err := lc.p.Future().Get(background); err == nil && held != nil {
		lc.sh.c.unlockHeld(held)
	}
}

// left tells the server that lc gave up: a call queued there leaves the queue (and releases a grant made to it
// meanwhile); a fair-lock waiter leaves its kind's queue. then runs once the server answered.
func (lc *lockCall) left(then func()) {
	switch {
	case lc.serverQueue:
		lc.leave(false, then, nil)
	case lc.lo.rules != nil:
		lc.lo.rules.left(lc, then)
	default:
		runThen(then)
	}
}

// permits is 1: a lock call takes no permits.
func (lc *lockCall) permits() int64 { return 1 }

var _ waitCall = (*lockCall)(nil)

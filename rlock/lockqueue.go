package rlock

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// The client side of the plain lock's queue of waiters (rlock/internal/scripts, lock.go, has the server side and
// its layout).
//
// Why a queue on the server. A lock is contended between processes, or a sync.Mutex would do. When every waiting
// process learns of a release from the lock's channel, every release wakes one waiter in every process: they all
// attempt, one wins, the rest go back to sleep — work that grows with the number of processes while the lock
// passes no faster (a herd), and the waiter that wins is the one whose attempt arrives first, not the one that
// waited longest. ZooKeeper's lock recipe and etcd's concurrency.Mutex avoid both by ordering the waiters on the
// server and having each watch only its predecessor. Here the waiters of every client are queued beside the lock,
// in its hash slot, by their refused attempt (so queuing costs no extra command), and the release script grants
// the lock to the head of the queue in the same step and tells that waiter's client on the client's own grant
// channel: a hand-over costs one script and one message, whichever process the next waiter lives in, nobody else
// wakes, and waiters are served first come, first served across processes. When the head is a waiter of the
// releasing client itself, the release's reply says so and no message is published (the in-process hand-off, one
// round trip).
//
// A waiter keeps its entry alive by attempting again every refresh interval (a third of the liveness window, or of
// its lease when shorter); an entry nobody refreshed for the liveness window is dropped by the next script that
// looks at the head, so a waiter whose process died blocks the others for at most that window. A waiter that gives
// up takes its entry out (scripts.LockLeave), and releases the lock if it was granted in the meantime. A grant
// message that is lost (the subscription was down) costs the waiter at most its refresh interval: its next attempt
// finds the hold and claims it instead of re-entering it (scripts.LockAcquire, the claim flag of its spec).

// Timing of the queue. The liveness window is also the lease of a watchdog lock handed to a waiter (the watchdog's
// first renewal follows within a third of it), so that a grant to a waiter whose process died in the meantime
// keeps the lock for at most the window, not the whole watchdog timeout.
const (
	queueLiveness = scripts.QueueLiveness
	// queueLinger is how long a client keeps a lock's subscriptions after its last local waiter left: a process
	// whose goroutine waits again right after each hold (a contended loop) keeps them instead of subscribing and
	// unsubscribing around every wait.
	queueLinger = time.Second
)

// wakeSpecs are the specs (see scripts.LockAcquire) of a waiter that takes the lock with its own attempt (a fenced
// lock's, or any plain waiter while grants wait for replicas), with its flag "0" and "1": its entry kind is 'w',
// only woken, never granted by someone else, so its lease is unused.
var wakeSpecs = specsOf("w0")

// specsOf returns the specs of entry kind k with the flag "0" and "1", the nonce the owner's id.
func specsOf(k string) [2]string { return [2]string{k + ":0:", k + ":1:"} }

// The queue's part of a lock call: its nonce identifies the call in its client's grant messages — the owner's id
// when the owner was made for the call, else a number drawn for it (lockCall.nonceMinted; kept in lockCall.token
// while the call waits) — and lockCall.wakeOnly says that its entry is a 'w' one. The rest is derived when needed,
// to keep the call in its allocation size class.

// initQueueCall prepares lc's queue entry. Called before lc is shared.
func (lc *lockCall) initQueueCall(own owner) {
	c := lc.sh.c
	if lc.noWait {
		return
	}
	if !own.fresh {
		// From the owner ids' counter: never one of this client's fresh owner ids.
		lc.token = int64(mintedOwnerBase + c.nextOwner.Add(1))
		lc.nonceMinted = true
	}
	// A fenced waiter needs its token from its own script; a grant waiting for replicas needs its WAIT.
	lc.wakeOnly = lc.lo.rules != nil || c.synced()
}

// specArg is the call's spec (ARGV[3] of its attempts and its leave; see scripts.LockAcquire) with flag: "" for a
// try, or a call that waits without a place in the queue, which are never queued. A call whose nonce is its
// owner's id (the common case) gets a cached string; a minted nonce makes one.
func (lc *lockCall) specArg(flag bool) string {
	var specs *[2]string
	switch {
	case lc.noWait || !lc.serverQueue:
		return ""
	case lc.wakeOnly:
		specs = &wakeSpecs
	default:
		specs = lc.sh.c.grantSpecs(lc.grantLease())
	}
	f := 0
	if flag {
		f = 1
	}
	if !lc.nonceMinted {
		return specs[f]
	}
	return specs[f] + strconv.FormatInt(lc.token, 10)
}

// nonce is the call's queue nonce: its owner's id, or the number minted for it.
func (lc *lockCall) nonce() uint64 {
	if lc.nonceMinted {
		return uint64(lc.token)
	}
	n, _ := strconv.ParseUint(lc.owner[strings.LastIndexByte(lc.owner, ':')+1:], 10, 64)
	return n
}

// hasNonce reports whether the call's nonce is n, whose decimal form is d, without parsing its owner id.
func (lc *lockCall) hasNonce(n uint64, d string) bool {
	if lc.nonceMinted {
		return uint64(lc.token) == n
	}
	o := lc.owner
	return len(o) > len(d) && o[len(o)-len(d)-1] == ':' && o[len(o)-len(d):] == d
}

// grantLease is the lease a grant to the call by someone else's script applies: the call's lease, or, for the
// watchdog, the queue's liveness window when shorter (the first renewal follows within a third of it).
func (lc *lockCall) grantLease() time.Duration {
	if lc.watchdog {
		return lc.sh.c.watchdogGrant.lease
	}
	return lc.lease
}

// grantSpecs are the specs of a waiter that may be granted the lock with lease (entry kind "g<lease in ms>"), its
// nonce its owner's id. The watchdog's are made once; others are cached one lease at a time (a process usually
// waits with one or two leases).
func (c *Client) grantSpecs(lease time.Duration) *[2]string {
	if lease == c.watchdogGrant.lease {
		return &c.watchdogGrant.specs
	}
	if e := c.lastGrant.Load(); e != nil && e.lease == lease {
		return &e.specs
	}
	e := &leaseSpecs{lease: lease, specs: specsOf("g" + strconv.FormatInt(lease.Milliseconds(), 10))}
	c.lastGrant.Store(e)
	return &e.specs
}

// leaseSpecs is a lease and its grant specs.
type leaseSpecs struct {
	lease time.Duration
	specs [2]string
}

// grantCache holds the specs grantSpecs reuses.
type grantCache struct {
	watchdogGrant leaseSpecs
	lastGrant     atomic.Pointer[leaseSpecs]
}

// refreshEvery is how often a queued waiter attempts again to keep its entry alive (and to claim a grant whose
// message it missed).
func (lc *lockCall) refreshEvery() time.Duration {
	return max(min(queueLiveness, lc.grantLease())/3, time.Millisecond)
}

// attemptSpec is the spec of an attempt of lc: its flag says, once the call has been queued, that a grant made to
// it is claimed (see scripts.LockAcquire). Called without the shard mutex, after the attempt began (queued is written
// before).
func (lc *lockCall) attemptSpec() string { return lc.specArg(lc.queued) }

// queuedRefusal decodes a queued waiter's refusal: the head waits for the lock's release, bounded by its PTTL and
// its refresh interval; a waiter behind it only for its refresh. A waiter queued again (its entry was gone) is
// told so apart (scripts.RequeuedNotHead).
func (lc *lockCall) queuedRefusal(ms int64) outcome {
	every := lc.refreshEvery()
	switch {
	case ms == scripts.QueuedNotHead:
		return outcome{bound: every, queued: true}
	case ms == scripts.RequeuedNotHead:
		return outcome{bound: every, queued: true, requeued: true}
	case ms <= scripts.RequeuedHeadBase+2:
		return outcome{bound: min(ttlBound(scripts.RequeuedHeadBase-ms), every), queued: true, requeued: true}
	}
	return outcome{bound: min(ttlBound(ms), every), queued: true}
}

// The grant messages. A client's grant channel carries "g<nonce>" (the waiter with that nonce holds the lock now)
// and "w<nonce>" (it should attempt now).
//
// A grant message is taken for the grant when it comes after the waiter's latest refused attempt was sent: the
// grant came after that attempt ran (a grant takes the entry out of the queue, and an attempt that finds the
// grant's hold claims it), so its lease counts from that sending at the latest. One case breaks the rule: a
// message late enough that the grant's lease ended unclaimed before that attempt ran, which then found its entry
// gone and queued the waiter again. Taken for a grant, it would hand the caller a lock that another owner may hold
// by then. The script tells such a refusal apart (scripts.RequeuedNotHead), and from then on the waiter doubts
// grant messages: each one only makes it attempt, which claims a grant still live (its lease re-armed from that
// attempt) and is refused otherwise. The cost, one round trip per grant, falls on a waiter whose entry was lost.

// grantNews is what a waiting lock call heard on its client's grant channel.
type grantNews uint8

const (
	// grantAnnounced: a grant to the call was announced while its attempt was in flight, so that attempt's refusal
	// is a grant (unless grantsDoubted).
	grantAnnounced grantNews = 1 << iota
	// grantsDoubted: a refusal queued the call again (outcome.requeued): a grant message may announce a grant whose
	// lease ended before that attempt ran, and only makes the call attempt.
	grantsDoubted
)

// onGrantMessage handles a message on q's grant channel, or the news that it was subscribed again. It runs on the
// event loop.
func (q *queue) onGrantMessage(m conn.Message) {
	if m.Kind != conn.KindMessage {
		q.onMessage(m) // resubscribed: treated as on the unlock channel
		return
	}
	p := m.Payload
	if len(p) < 2 || (p[0] != 'g' && p[0] != 'w') {
		return
	}
	nonce, err := strconv.ParseUint(p[1:], 10, 64)
	if err != nil {
		return
	}
	q.sh.mu.Lock()
	if q.dead {
		q.sh.mu.Unlock()
		return
	}
	w, granted := q.deliverLocked(nonce, p[1:], p[0] == 'g')
	q.sh.mu.Unlock()
	w.act(granted)
}

// deliverLocked applies a grant (granted) or a wake-up to the waiter with nonce. An idle waiter is returned, marked
// attempting, for the caller to act on once the shard mutex is released (act): settled with the grant, or sent an
// attempt. A waiter whose attempt is in flight learns it when that attempt's reply comes; a waiter this client does
// not know yet (its first refusal is still on the way) finds it when it joins. Called with the shard mutex.
func (q *queue) deliverLocked(nonce uint64, digits string, granted bool) (*waiter, bool) {
	for w := q.head; w != nil; w = w.next {
		lc, ok := w.call.(*lockCall)
		if !ok || !lc.hasNonce(nonce, digits) {
			continue
		}
		switch w.state {
		case wIdle:
			if granted && w.grantNews&grantsDoubted == 0 {
				// Settled as the reply of an attempt would be; the grant came after its last refused attempt ran
				// (sentAt still says when that was sent). A waiter that doubts grant messages attempts instead.
				w.state = wAttempting
				w.stopTimerLocked()
				return w, true
			}
			w.again = false
			w.beginAttemptLocked()
			return w, false
		case wAttempting, wGranting:
			// Learnt when the attempt's reply, or the reply of the release that names it, comes.
			if granted {
				w.grantNews |= grantAnnounced
			} else {
				w.again = true
			}
		}
		return nil, false
	}
	if q.pending == nil {
		q.pending = make(map[uint64]pendingMessage)
	}
	m := q.pending[nonce]
	q.pending[nonce] = pendingMessage{granted: m.granted || granted, at: q.c.now()}
	return nil, false
}

// act carries out what deliverLocked decided for w (nil: nothing). Called without the shard mutex.
func (w *waiter) act(granted bool) {
	switch {
	case w == nil:
	case granted:
		lc := w.call.(*lockCall)
		lc.settle(lc.grantedByOther(), false)
	default:
		w.call.send()
	}
}

// grantedByOther is the outcome of a grant someone else's script made to lc: one hold, with lc's grant lease,
// counted from lc's last refused attempt (the grant came after it ran).
func (lc *lockCall) grantedByOther() outcome {
	return outcome{granted: true, count: 1, handoff: true, lease: lc.grantLease()}
}

// leave takes lc's entry out of the server's queue after lc gave up without a grant (or its attempt's outcome is
// unknown), and releases a grant made to it meanwhile. Retried on transport failures until it is confirmed, or the
// entry and any grant to it have expired by themselves. later sends the first attempt after RetryDelay too: after an
// attempt whose outcome is unknown, which the server may not have read yet (orphan.go). then, when not nil, runs
// when the first attempt is answered or fails; settled, when not nil, once the leave is confirmed or given up.
func (lc *lockCall) leave(later bool, then, settled func()) {
	if lc.noWait && !lc.fresh {
		// A try whose owner came with it (a re-entry, a first hold through a held context, WithOwner) is never
		// queued, and its spec names no nonce: the leave would take any hold of the owner for the try's grant, and
		// release a hold the caller has. Its grant, if any, is released as a lost grant (lostInFlight) or given
		// back with its late reply.
		runThen(then)
		runThen(settled)
		return
	}
	c := lc.sh.c
	give := c.now() + queueLiveness + lc.lease
	ran := false   // an attempt whose reply was lost may have run (and released a grant)
	c.leaves.add() // Close waits for the leaves in flight, so that a closing process leaves no entry behind
	done := func() {
		c.leaves.done()
		runThen(settled)
	}
	var try func()
	try = func() {
		k := plainKeys(lc.lo.name)
		c.conn.Eval(background, leaveScript, k[:], lc.leaseArg(), lc.owner, lc.leaveSpec(),
			c.pub()).OnComplete(func(v resp.Value, err error) {
			if then != nil {
				first := then
				then = nil // the retries that follow run one at a time, after this one
				first()
			}
			if err == nil {
				if v = c.published(lc.sh, lc.lo.name, v); v.Type == resp.Integer && (v.Int == 2 || (ran && v.Int == 0)) {
					c.orphanSettled(lc.lo.name, lc.owner, true, nil) // a grant made to it was released
				}
				done()
				return
			}
			ran = ran || errors.Is(err, conn.ErrConnLost)
			if c.closed.Load() {
				done()
				return
			}
			if c.now() >= give {
				c.log.Warn("rlock: taking a waiter out of the lock's queue failed; its entry expires by itself",
					"lock", lc.lo.name, "owner", lc.owner, "err", err)
				c.orphanSettled(lc.lo.name, lc.owner, false, err) // a grant to it, if any, too
				done()
				return
			}
			if !c.after(c.cfg.RetryDelay, func(closed bool) {
				if closed {
					done()
					return
				}
				try()
			}) {
				done() // the Client closed meanwhile, or the timer refused the retry
			}
		})
	}
	if !later || !c.after(c.cfg.RetryDelay, func(closed bool) {
		if closed {
			done()
			return
		}
		try()
	}) {
		try()
	}
}

// leaveSpec is the spec of lc's leave: the one it was queued with, its flag "1" (a grant made to it is looked for).
// A try that failed ambiguously was never queued; its leave only looks for a grant.
func (lc *lockCall) leaveSpec() string {
	if lc.noWait {
		return wakeSpecs[1]
	}
	return lc.specArg(true)
}

// grantedByRelease settles lc, named as next waiter by a release of this client sent at sentAt (state
// wGranting), with the grant that release made: its lease counts from the release's sending.
func (lc *lockCall) grantedByRelease(sentAt time.Duration) {
	sh := lc.sh
	sh.mu.Lock()
	if lc.state == wGranting {
		lc.state, lc.sentAt = wAttempting, sentAt
	}
	sh.mu.Unlock()
	lc.settle(lc.grantedByOther(), false) // a call Close took away gives the grant back
}

// resumeAfterRelease returns lc, named as next waiter by a release of this client that did not grant it (state
// wGranting), to waiting: a call queued on the server waits for its turn there; one that is not attempts now,
// which queues it (after the hold-back of a run's end: queue.takeNextLocked). A call abandoned meanwhile leaves.
func (lc *lockCall) resumeAfterRelease() {
	w := &lc.waiter
	sh := w.sh
	sh.mu.Lock()
	if w.state != wGranting {
		sh.mu.Unlock()
		return
	}
	if w.abandoned != nil {
		act := w.leaveLocked(false)
		queued, err := w.queued, w.abandoned
		sh.mu.Unlock()
		act.run()
		if queued {
			lc.left(nil)
		}
		lc.fail(err)
		return
	}
	if w.grantNews&grantAnnounced != 0 {
		// Granted by someone else's release while this client's release named it (after its last refused attempt),
		// unless the waiter doubts grant messages: its next attempt claims the grant then.
		w.grantNews &^= grantAnnounced
		if w.grantNews&grantsDoubted == 0 {
			w.state = wAttempting
			sh.mu.Unlock()
			lc.settle(lc.grantedByOther(), false)
			return
		}
		w.again = true
	}
	w.state = wIdle
	attempt := false
	now := sh.c.now()
	switch {
	case w.again:
		w.again = false
		w.beginAttemptLocked()
		attempt = true
	case w.queued:
		w.armLocked(lc.refreshEvery())
	case w.q != nil && w.q.holdBack > now:
		w.armLocked(w.q.holdBack - now)
	default:
		w.beginAttemptLocked()
		attempt = true
	}
	sh.mu.Unlock()
	if attempt {
		lc.send()
	}
}

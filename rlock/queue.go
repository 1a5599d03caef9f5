package rlock

import (
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
	"github.com/locksmith-go/locksmith/timer"
)

// queue is the local FIFO of this client's waiters woken on one channel (a lock's unlock channel, a semaphore's,
// a latch's; a fair-lock waiter's own), with the channel's pub/sub subscription.
//
// For the plain and fenced locks the server orders the waiters of every client (lockqueue.go): this queue only
// finds a waiter when its grant or wake-up arrives on the client's grant channel, and its unlock-channel
// subscription tells its head when a client that does not queue (a Redisson client) released the lock. For the
// other objects only the head talks to the server: it attempts again when the channel says the object was
// released, when the bound its last refusal returned has passed, or when the subscription was (re)established;
// waiters behind it send nothing. Other objects wake more waiters per message (wakeRule), but the head alone keeps
// a bound on the timer.
//
// A queue exists while it has waiters: the first waiter creates it and subscribes (reference-counted by conn, so a
// channel has one subscription per client), the last one to leave deletes it and closes the subscription — a lock
// queue after lingering for queueLinger, in case a waiter comes back. The waiters of a call without a channel (rate
// limiters) are kept in their shard's sleepers queue, which has no subscription and never goes away, so that Close
// finds them.
//
// All fields are guarded by the shard mutex of the object's name.
type queue struct {
	c    *Client
	sh   *shard
	key  string   // the channel; "" for a shard's sleepers
	rule wakeRule // the rule of the waiter that created it (every object on one channel has the same)

	head, tail *waiter
	n          int

	sub        *conn.Subscription // nil until confirmed (or when subscribing failed)
	subscribed bool               // the subscriptions were confirmed, or failed and waiters rely on their bounds
	dead       bool               // removed from the shard: a late subscription is closed at once

	// A lock queue's (plain and fenced locks): the lock's name, which keys it in its shard's lockQueues, and its
	// second subscription, this client's grant channel of the lock.
	lockName   string             // "" for other objects
	grantKey   string             // "" for other objects
	grantSub   *conn.Subscription // nil until confirmed
	subsToGo   int8               // subscriptions not confirmed yet
	linger     *timer.Timeout     // while the queue is empty and lingering
	pending    map[uint64]pendingMessage
	pendingOld time.Duration // when pending was last swept
	// runStart is when the lock began passing from holder to holder of this client by its releases naming the next
	// waiter (0: it does not); holdBack, until when this client's waiters leave a lock freed at the end of such a run
	// to others; run, how many grants in a row went to this client's waiters before anyone queued ahead of them
	// (capped by localRun). See takeNextLocked.
	runStart, holdBack time.Duration
	run                int
}

// pendingMessage is a grant message or a wake-up that arrived for a waiter this client did not know yet: its
// first refusal was still on the way. It is taken when the waiter joins (takePendingLocked).
type pendingMessage struct {
	granted bool
	at      time.Duration
}

// wakeRule says whom a message on a channel wakes. Whatever the rule, a waiter woken while its attempt is in
// flight attempts again when the attempt is refused, and the news that the channel was subscribed again after a
// reconnect (messages may have been lost) wakes as a message whose payload cannot be read.
type wakeRule uint8

const (
	// wakeOne: the head. A lock was released; one waiter can take it (plain and fenced locks).
	wakeOne wakeRule = iota
	// wakeAll: every waiter. A latch opened; a fair-lock waiter's own channel says it is its turn.
	wakeAll
	// wakePermits: in order, as many waiters as the published number of available permits covers (semaphores);
	// a payload that is not a number wakes everyone.
	wakePermits
	// wakeRW: "1" (a write unlock) wakes everyone, any other payload the head (read-write locks).
	wakeRW
)

// joinLocked appends w to the queue of its channel, creating the queue when w is its first waiter; it reports
// whether the caller must subscribe (after releasing the shard mutex).
func (c *Client) joinLocked(w *waiter) (q *queue, subscribe bool) {
	sh := w.sh
	key, byName := w.queueKey()
	m := sh.queues
	if byName {
		m = sh.lockQueues
	}
	if key == "" {
		q = sh.sleepers
	} else if q = m[key]; q == nil {
		q = &queue{c: c, sh: sh, key: key, rule: w.rule}
		if byName {
			// A plain-layout lock's queue: subscribed to the lock's unlock channel and to this client's grant
			// channel, both made once per queue.
			q.lockName, q.key, q.grantKey = key, channelName(key), grantChannel(key, c.id)
		}
		m[key] = q
		subscribe = true
	} else if q.linger != nil {
		q.linger.Cancel()
		q.linger = nil
	}
	w.q = q
	w.prev, w.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
	q.n++
	return q, subscribe
}

// leaveLocked unlinks w from its queue. It returns the queue when it is now empty and dead (the caller closes its
// subscription after releasing the shard mutex), and whether w was the head. A lock queue that empties lingers
// instead (queueLinger): it dies when its timer runs and nobody came back.
func (q *queue) leaveLocked(w *waiter) (empty *queue, wasHead bool) {
	wasHead = q.head == w
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next, w.q = nil, nil, nil
	q.n--
	if q.n == 0 && q.key != "" {
		if q.grantKey != "" && q.linger == nil {
			if tm, err := q.c.timer.NewTimeout(q, queueLinger); err == nil {
				q.linger = tm
				return nil, wasHead
			}
		}
		q.killLocked()
		return q, wasHead
	}
	return nil, wasHead
}

// killLocked removes q from its shard: a late subscription or message finds it dead.
func (q *queue) killLocked() {
	q.dead = true
	if q.linger != nil {
		q.linger.Cancel()
		q.linger = nil
	}
	m, k := q.sh.queues, q.key
	if q.lockName != "" {
		m, k = q.sh.lockQueues, q.lockName
	}
	if m[k] == q {
		delete(m, k)
	}
}

// Run is a lingering lock queue's timer: nobody came back, so it dies and its subscriptions close. It runs on the
// timer's worker.
func (q *queue) Run(t *timer.Timeout) {
	q.sh.mu.Lock()
	if q.linger != t || q.n != 0 || q.dead {
		q.sh.mu.Unlock()
		return
	}
	q.linger = nil
	q.killLocked()
	q.sh.mu.Unlock()
	q.closeSubscription()
}

// takePendingLocked takes a message that arrived for w before it joined (see pendingMessage), if any, and sweeps
// messages nobody took for a liveness window (their waiters left). Called with the shard mutex.
func (q *queue) takePendingLocked(w *waiter) (granted, found bool) {
	if len(q.pending) == 0 {
		return false, false
	}
	nonce := w.call.(*lockCall).nonce()
	m, found := q.pending[nonce]
	if found {
		delete(q.pending, nonce)
	}
	if now := q.c.now(); now-q.pendingOld > queueLiveness {
		for k, m := range q.pending {
			if now-m.at > queueLiveness {
				delete(q.pending, k)
			}
		}
		q.pendingOld = now
	}
	return m.granted, found
}

// closeLocked empties q for Close: its waiters are marked done (a reply still in flight for one finds it done, and
// a grant is given back) and appended to ws, for Close to fail them once the shard mutex is released.
func (q *queue) closeLocked(ws []*waiter) []*waiter {
	for w := q.head; w != nil; {
		next := w.next
		w.stopTimerLocked()
		w.unwatchLocked() // Close unregisters every watch of the shard itself
		w.state = wDone
		w.prev, w.next, w.q = nil, nil, nil
		ws = append(ws, w)
		w = next
	}
	q.head, q.tail, q.n = nil, nil, 0
	if q.linger != nil {
		q.linger.Cancel()
		q.linger = nil
	}
	return ws
}

// takeNextLocked returns the waiter a final release of the plain lock by this client should name as its next
// waiter (scripts.LockRelease: granted in the same step when nobody of another client is queued), marked wGranting,
// or nil: the head when it is idle and may be granted by someone else's script ('g' entry), unless the client's run
// of such grants has lasted runBound. Then the release frees the lock (publishing the unlock message) and this
// client's waiters hold back for runGap, so that a client that does not queue (Redisson) is never starved by a
// run that never ends. Called with the shard mutex.
func (q *queue) takeNextLocked() *lockCall {
	w := q.head
	if w == nil || w.state != wIdle || !w.serverQueue || w.wakeOnly || w.noWait {
		return nil
	}
	now := q.c.now()
	switch {
	case q.runStart == 0:
		q.runStart = now
	case now-q.runStart >= runBound:
		q.runStart = 0
		q.holdBack = now + runGap
		w.armLocked(runGap)
		return nil
	}
	w.state = wGranting
	w.again = false
	w.armLocked(0) // its deadline only, while the release is in flight
	return w.call.(*lockCall)
}

// preferNextLocked reports whether a release naming this client's next waiter may grant it before waiters of
// other clients queued ahead (a local run, one round trip and no other process woken), and counts the grant: at
// most localRun in a row, after which the release serves the queue's head. Called with the shard mutex.
func (q *queue) preferNextLocked() bool {
	if q.run >= localRun {
		q.run = 0
		return false
	}
	q.run++
	return true
}

// localRun is the most grants a client's releases give its own waiters in a row while waiters of other clients are
// queued ahead of them. A process thus receives at most localRun+1 consecutive grants while another waits longer.
const localRun = 8

// The bound on a client's run of grants to its own waiters (takeNextLocked): the same as the queue's on the
// server (scripts.RunBound, scripts.RunGap).
const (
	runBound = scripts.RunBound
	runGap   = scripts.RunGap
)

// wakeLocked wakes waiters by the queue's rule after a message with payload (resubscribed: the subscription was
// (re-)established, so a message may have been missed). Idle waiters are marked attempting and returned, the first
// in one (no allocation for a lock's single wake-up) and the others in more, for the caller to send their
// attempts after releasing the shard mutex; waiters whose attempt is in flight are told to attempt again.
func (q *queue) wakeLocked(payload string, resubscribed bool) (one *waiter, more []*waiter) {
	budget := int64(-1) // -1: everyone; -2: the head; otherwise the permits to share out
	switch {
	case resubscribed && q.grantKey != "":
		// Grant messages may have been missed: every waiter looks (and claims a grant it finds).
	case q.rule == wakeOne:
		budget = -2
	case resubscribed:
	case q.rule == wakeRW && payload != scripts.WriteUnlockMessage:
		budget = -2
	case q.rule == wakePermits:
		if n, err := strconv.ParseInt(payload, 10, 64); err == nil {
			budget = max(n, 0)
		}
	}
	for w := q.head; w != nil; w = w.next {
		if budget >= 0 {
			need := w.call.permits()
			if budget < need {
				break // queue order is kept: a waiter the permits do not cover stops the wake-up
			}
			budget -= need
		}
		switch {
		case w.state == wIdle && q.subscribed:
			w.again = false
			w.beginAttemptLocked()
			if one == nil {
				one = w
			} else {
				more = append(more, w)
			}
		case w.state == wIdle || w.state == wAttempting:
			// Before the subscription is confirmed, the confirmation wakes it; an attempt in flight attempts again.
			w.again = true
		}
		if budget == -2 {
			break
		}
	}
	return one, more
}

// wake sends the attempts wakeLocked decided. Called without the shard mutex.
func wake(one *waiter, more []*waiter) {
	if one != nil {
		one.call.send()
	}
	for _, w := range more {
		w.call.send()
	}
}

// subscribe subscribes q to its channel (and a lock queue to its grant channel too). Until every subscription is
// confirmed the head does not attempt again (it would miss a release published in between: Redisson #1763); once
// they are, waiters are woken as after a resubscription. If subscribing fails (the pub/sub connection is down),
// waiters rely on their bounds meanwhile, and the subscription is tried again after RetryDelay for as long as the
// queue lives.
func (c *Client) subscribe(q *queue) {
	q.sh.mu.Lock()
	q.subsToGo = 1
	if q.grantKey != "" {
		q.subsToGo = 2
	}
	q.sh.mu.Unlock()
	c.subscribeOne(q, q.key, q.onMessage, &q.sub)
	if q.grantKey != "" {
		c.subscribeOne(q, q.grantKey, q.onGrantMessage, &q.grantSub)
	}
}

// subscribeOne subscribes q to one of its channels; sub is q's field for it (guarded by the shard mutex).
func (c *Client) subscribeOne(q *queue, key string, handler func(conn.Message), sub **conn.Subscription) {
	c.conn.Subscribe(key, handler).OnComplete(func(s *conn.Subscription, err error) {
		q.sh.mu.Lock()
		if q.dead {
			q.sh.mu.Unlock()
			if s != nil {
				s.Close()
			}
			return
		}
		*sub = s
		var one *waiter
		var more []*waiter
		if q.subsToGo--; q.subsToGo <= 0 {
			q.subscribed = true
			one, more = q.wakeLocked("", true)
		}
		q.sh.mu.Unlock()
		wake(one, more)
		if err == nil || c.closed.Load() {
			return
		}
		delay := c.cfg.RetryDelay
		if c.subscribeRefused("", key, err) {
			delay = max(delay, pubSubDeniedRetry) // logged once: the ACL is not fixed by asking again at once
		} else {
			c.log.Warn("rlock: cannot subscribe to the channel; waiters retry at their bounds until it works",
				"channel", key, "err", err)
		}
		c.timer.NewTimeout(timer.TaskFunc(func(*timer.Timeout) {
			q.sh.mu.Lock()
			retry := !q.dead && *sub == nil
			if retry {
				q.subsToGo++
			}
			q.sh.mu.Unlock()
			if retry {
				c.subscribeOne(q, key, handler, sub)
			}
		}), delay)
	})
}

// onMessage handles a message on the channel (a lock's "0", a write unlock's "1", a semaphore's number of
// permits) or the news that the subscription was re-established after a reconnect. It runs on the event loop.
func (q *queue) onMessage(m conn.Message) {
	q.sh.mu.Lock()
	if q.dead {
		q.sh.mu.Unlock()
		return
	}
	if q.grantKey != "" && m.Kind == conn.KindMessage && q.holdBack > q.c.now() {
		// This client freed the lock for others (takeNextLocked): its head attempts when the gap ends.
		if h := q.head; h != nil && h.state == wIdle {
			h.armLocked(q.holdBack - q.c.now())
		}
		q.sh.mu.Unlock()
		return
	}
	one, more := q.wakeLocked(m.Payload, m.Kind != conn.KindMessage)
	q.sh.mu.Unlock()
	wake(one, more)
}

// closeSubscription ends q's subscription once q is dead. Called without the shard mutex; the subscription field
// is read under it.
func (q *queue) closeSubscription() {
	q.sh.mu.Lock()
	s, g := q.sub, q.grantSub
	q.sub, q.grantSub = nil, nil
	q.sh.mu.Unlock()
	if s != nil {
		s.Close()
	}
	if g != nil {
		g.Close()
	}
}

// queueKey is the key of w's local queue in its shard: a plain-layout lock's name (in lockQueues: the plain and
// fenced locks share their lock's queue, and the hot path finds it without making the channel's name), or the
// channel w is woken on (in queues; "" for the sleepers).
func (w *waiter) queueKey() (key string, byName bool) {
	if lc, ok := w.call.(*lockCall); ok && lc.lo.kind == kindPlain {
		return lc.lo.name, true
	}
	return w.call.channel(), false
}

// queueOfLocked returns w's local queue, or nil when it has none yet. Called with the shard mutex.
func (sh *shard) queueOfLocked(w *waiter) *queue {
	key, byName := w.queueKey()
	if byName {
		return sh.lockQueues[key]
	}
	return sh.queues[key]
}

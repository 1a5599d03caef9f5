package rlock

import (
	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/timer"
)

// queue is the local FIFO of this client's waiters for one lock name, with the name's pub/sub subscription.
//
// Only the head waiter talks to the server: it retries when the unlock channel says the lock was released, when
// the TTL its last failed attempt returned has passed, or when the subscription was (re)established. Waiters
// behind it send nothing. A new acquirer joins the tail instead of barging in front of waiters that came first,
// and an Unlock of this client hands the lock straight to the head (handoffSrc: one round trip, the lock never
// free in between). So waiting costs the server one attempt per release at most, and waiters of one client are
// served in order.
//
// A queue exists while it has waiters: the first waiter creates it and subscribes (reference-counted by conn, so a
// name has one subscription per client), the last one to leave deletes it and closes the subscription.
//
// All fields are guarded by the shard mutex of the name.
type queue struct {
	c    *Client
	sh   *shard
	keys []string // {name, channel}

	head, tail *waiter
	n          int

	sub        *conn.Subscription // nil until confirmed (or when subscribing failed)
	subscribed bool               // the subscription was confirmed, or failed and waiters rely on TTL bounds
	dead       bool               // removed from the shard: a late subscription is closed at once

	// wake records a release signal that arrived while the head could not act on it (its attempt or hand-off was
	// in flight, or the subscription was not confirmed yet), so that the head retries at once instead of waiting
	// for its TTL: Redisson's semaphore permit, as one flag.
	wake bool

	// chain counts consecutive hand-offs. After handoffBurst of them the lock is released the ordinary way
	// (deleted and published), so waiters of other processes, which only learn of releases from the channel,
	// get their chance instead of watching this client pass the lock around forever.
	chain int
}

// handoffBurst is the most consecutive local hand-offs of one lock before an ordinary release.
const handoffBurst = 32

// enqueueLocked appends w to its name's queue, creating the queue when w is the first waiter; it reports whether
// the caller must subscribe (after releasing the shard mutex).
func (c *Client) enqueueLocked(w *waiter) (q *queue, subscribe bool) {
	sh := w.lk.sh
	q = sh.queues[w.lk.name]
	if q == nil {
		q = &queue{c: c, sh: sh, keys: w.lk.keys}
		sh.queues[w.lk.name] = q
		subscribe = true
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
// subscription after releasing the shard mutex), and whether w was the head.
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
	if q.n == 0 {
		q.dead = true
		if q.sh.queues[q.keys[0]] == q {
			delete(q.sh.queues, q.keys[0])
		}
		return q, wasHead
	}
	return nil, wasHead
}

// wakeHeadLocked reacts to a sign that the lock may be free. It returns the head waiter when it should retry now
// (its state is then wAttempting; the caller sends the attempt after releasing the shard mutex), or nil when the
// signal was recorded for later.
func (q *queue) wakeHeadLocked() *waiter {
	w := q.head
	if w == nil {
		return nil
	}
	if !q.subscribed || w.state != wIdle {
		q.wake = true
		return nil
	}
	q.wake = false
	w.beginAttemptLocked()
	return w
}

// takeForHandoffLocked returns the head waiter to hand the lock to, marked wGranting, or nil when the release
// should be an ordinary one: no idle head, or the burst of hand-offs is used up.
func (q *queue) takeForHandoffLocked() *waiter {
	w := q.head
	if w == nil || w.state != wIdle {
		return nil
	}
	if q.chain >= handoffBurst {
		q.chain = 0
		return nil
	}
	q.chain++
	w.stopTimerLocked()
	w.state = wGranting
	w.sentAt = q.c.now()
	return w
}

// subscribe subscribes q to its unlock channel. Until the subscription is confirmed the head does not retry (it
// would miss a release published in between: Redisson #1763); once it is, the head retries at once. If the
// subscription fails (the pub/sub connection is down), the head retries at its TTL bounds meanwhile, and the
// subscription is tried again after RetryDelay for as long as the queue has waiters.
func (c *Client) subscribe(q *queue) {
	c.conn.Subscribe(q.keys[1], q.onMessage).OnComplete(func(s *conn.Subscription, err error) {
		q.sh.mu.Lock()
		if q.dead {
			q.sh.mu.Unlock()
			if s != nil {
				s.Close()
			}
			return
		}
		q.sub = s
		q.subscribed = true
		w := q.wakeHeadLocked()
		q.sh.mu.Unlock()
		if w != nil {
			w.sendAttempt()
		}
		if err == nil || c.closed.Load() {
			return
		}
		c.log.Warn("rlock: cannot subscribe to the unlock channel; waiters retry at the lock's TTL until it works",
			"channel", q.keys[1], "err", err)
		c.timer.NewTimeout(timer.TaskFunc(func(*timer.Timeout) {
			q.sh.mu.Lock()
			retry := !q.dead && q.sub == nil
			q.sh.mu.Unlock()
			if retry {
				c.subscribe(q)
			}
		}), c.cfg.RetryDelay)
	})
}

// onMessage handles a message on the unlock channel (any payload: Redisson publishes "0") or the news that the
// subscription was re-established after a reconnect (a release may have been missed). It runs on the event loop.
func (q *queue) onMessage(conn.Message) {
	q.sh.mu.Lock()
	if q.dead {
		q.sh.mu.Unlock()
		return
	}
	w := q.wakeHeadLocked()
	q.sh.mu.Unlock()
	if w != nil {
		w.sendAttempt()
	}
}

// closeSubscription ends q's subscription once q is dead. Called without the shard mutex; the subscription field
// is read under it.
func (q *queue) closeSubscription() {
	q.sh.mu.Lock()
	s := q.sub
	q.sub = nil
	q.sh.mu.Unlock()
	if s != nil {
		s.Close()
	}
}

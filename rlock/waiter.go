package rlock

import (
	"errors"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/timer"
)

// The waiting engine. Every call of the package that may have to wait — acquiring any lock, taking semaphore
// permits, awaiting a latch, taking rate-limiter permits — is a waiter: a struct driven by its attempt replies,
// pub/sub messages on its object's channel, and one timeout on the client's timer. No goroutine waits, no loop
// polls. The typed side of a call (what it sends, what a grant is: lockCall for locks, permitCall for the rest)
// embeds the waiter; what differs between objects is a wake rule and a few flags, not the engine:
//
//  1. The call sends an attempt. Granted: done. For the plain and fenced locks the attempt also queues the call on
//     the server when it is refused (lockqueue.go): their waiters are ordered there, across every client.
//  2. Refused: the call joins its channel's queue (queue.go); the first waiter of a channel subscribes to it. The
//     head of the queue does not attempt again before the subscription is confirmed, so that a release published
//     in between is not missed (Redisson #1763).
//  3. It then waits, idle, for a wake-up: a message on the channel wakes waiters by the object's rule (the head for
//     a lock; as many as the published permits cover for a semaphore; everyone for a latch or a write unlock), and
//     a waiter woken while its attempt is in flight attempts again at once.
//  4. Every wait is bounded on the timer: the head of a queue attempts again at the latest when the bound its last
//     refusal gave has passed — the holder's remaining lease for a lock, the time until a permit's lease ends, and
//     recheckBound (a second) for what has no lease to wait for (a key without expiry, a semaphore, a latch) — so a
//     lost message costs at most that. The others wait for the head to go: when it leaves, the next head attempts
//     at once, or, when the head was just granted an exclusive lock, waits for its release bounded by its lease.
//     A call without a channel (rate limiters) is woken by its own bound alone. A call queued on the server is
//     granted by the release script and told so on its client's grant channel (or by the release's reply, when the
//     releasing holder is of the same client); each such call attempts again at its refresh interval, which keeps
//     its server entry alive.
//  5. A call whose context ends, or whose wait runs out — also while an attempt is in flight — leaves at once; if
//     the server granted it in flight, the grant is given back (the lock released, the permits returned).
//  6. The last waiter to leave a channel closes the subscription.

// waitState is the life cycle of a waiter. Legal transitions, under the shard mutex of its object:
//
//	wNew        -> wAttempting  the first attempt is sent (a lock call may first wait for a release of its owner)
//	wNew        -> wIdle        it joined the tail of a queue with waiters (no barging)
//	wAttempting -> wIdle        refused: queued (or stays queued), waiting for a wake-up or its bound
//	wIdle       -> wAttempting  woken: a message, its bound, the subscription confirmed, the head before it left;
//	                            or granted by someone else's script (settled at once as an attempt's reply)
//	wIdle       -> wGranting    an Unlock of this client names it as the release's next waiter (plain locks)
//	wGranting   -> wAttempting  the release granted it (settled as an attempt's reply)
//	wGranting   -> wIdle        the release did not grant it (the lock went to the queue's head, or was freed)
//	any         -> wDone        granted, failed, or left (context ended, wait ran out, Close)
type waitState uint8

const (
	wNew waitState = iota
	wIdle
	wAttempting
	wGranting
	wDone
)

// inFlightGrace is how long a call whose wait ran out waits for the reply of its attempt in flight: a reply that
// comes within it settles the call as usual (a refusal is ErrNotAcquired, a grant a success); without one, the
// call ends with an unknown outcome (*OutcomeUnknownError) and a late grant is released.
const inFlightGrace = 250 * time.Millisecond

// recheckBound bounds a wait that nothing else bounds: a lock key without expiry (PTTL -1: written by something
// else than a lock client), a semaphore or latch (no lease to wait for), a queue whose subscription is not
// confirmed yet. The head of such a queue attempts again this often; nobody else does.
const recheckBound = time.Second

// waitCall is the typed side of a waiter: what it sends and what a grant means for it.
type waitCall interface {
	// channel is the channel the call is woken on, the key of its queue ("" : woken by its timer alone).
	channel() string
	// send sends one attempt (the waiter is wAttempting); its reply must reach settle. Called without the shard
	// mutex.
	send()
	// grantLocked records a grant before the call completes (a lock: its hold, so that the renewal is registered
	// first) and returns the hold (nil for calls that hold nothing). An error turns the grant into a failure, and
	// the grant is given back. Called with the shard mutex.
	grantLocked(o outcome) (*hold, error)
	// succeed completes the call with its grant (and the hold grantLocked made); when the caller's future failed
	// meanwhile (context, wait), the grant is given back instead. Called without the shard mutex.
	succeed(o outcome, h *hold)
	// fail completes the call with err and reports whether it did (false: it was complete already).
	fail(err error) bool
	// undo gives back a grant that no caller will see: it could not be recorded, or it arrived after Close.
	undo(o outcome)
	// giveBackResult gives back what the call completed with, for a blocking caller that stopped waiting and will
	// never see it.
	giveBackResult()
	// left tells the server that the call gave up without a grant (the lock's and the fair lock's queues); most
	// calls do nothing. then, when not nil, runs once the server answered (or the departure failed on the
	// transport), at once when nothing is sent.
	left(then func())
	// lostInFlight reacts to an attempt that failed after it may have run on the server (conn.ErrConnLost): it
	// leaves the server's queues and takes back what the attempt may have been granted.
	lostInFlight()
	// unknownOutcome is the error of the call when the outcome of its attempt is unknown: cause is the transport's
	// error, or errWaitInFlight when the call's wait ran out while the attempt was in flight.
	unknownOutcome(cause error) error
	// permits is how many permits the call takes (semaphores: see wakePermits); 1 for everything else.
	permits() int64
}

// outcome is the decoded answer to one attempt (or to the grant half of a hand-off).
type outcome struct {
	granted bool
	count   int64         // locks: the owner's hold count after the grant
	token   int64         // fenced locks: the grant's token
	bound   time.Duration // refused: the longest the wait should last before the next attempt (> 0)
	// hopeless: refused, and bound is the earliest moment it could succeed (nothing else can make it succeed
	// sooner): a call whose wait ends before then gives up at once instead of waiting for a known failure.
	hopeless bool
	handoff  bool // granted by someone else's script: a release, or an attempt that found the lock free
	queued   bool // refused, and the call is queued on the server (plain and fenced locks)
	requeued bool // refused, and queued again: the call's entry was gone (scripts.RequeuedNotHead)
	// lease is the lease a grant by someone else's script applied (the call's grant lease); 0: the call's own.
	lease time.Duration
	err   error
}

// waiter is the engine's part of one call in progress. The typed side embeds it, so a call is one allocation.
type waiter struct {
	sh       *shard // the shard of the call's object; its client is the call's (shard.c)
	call     waitCall
	startAt  time.Duration // on c.now(): when the call began
	deadline time.Duration // on c.now(); 0 = wait as long as the context allows

	// Set before the waiter is shared, then read-only. (The small fields are kept together: a waiter is allocated
	// on every acquire, and this keeps the plain lock's call in the allocation size class it had.)
	rule        wakeRule // how a message on the call's channel wakes waiters
	noWait      bool     // one attempt (a Try with wait 0)
	exclusive   bool     // a grant excludes the next waiter (exclusive locks), which then waits for a release
	resend      bool     // an attempt that may have run (conn.ErrConnLost) may be sent again: it is read-only
	serverQueue bool     // refused attempts queue the call on the server (plain and fenced locks: lockqueue.go)
	// A lock call's queue entry (lockqueue.go): nonceMinted says that its nonce is not the owner's id but was drawn
	// for it (and is kept in lockCall.token while it waits), wakeOnly that the entry is a 'w' one.
	nonceMinted bool
	wakeOnly    bool

	// Guarded by the shard mutex. (The small fields first, in what would otherwise be padding.)
	state      waitState
	again      bool  // woken while an attempt was in flight: attempt again at once when it is refused
	tmDeadline bool  // tm fires at the deadline (and is kept across attempts)
	retries    uint8 // resends of the current attempt
	watched    bool  // registered with its context's watch once (ctxwatch.go)
	watchHit   bool  // its context ended while it was watched: the watch abandons it
	queued     bool  // the server queued the call (a refusal said so): it must leave the queue if it gives up
	// grantNews is what the call's client heard on its grant channel (a lock call's; lockqueue.go).
	grantNews grantNews
	// prefer: named as next waiter by a release of this client that may grant it before the queue's head
	// (queue.preferNextLocked); set with wGranting.
	prefer         bool
	abandoned      error // why the call was abandoned (context, wait) while a command for it was in flight; nil if not
	q              *queue
	prev, next     *waiter
	tm             *timer.Timeout
	cw             *ctxWatch // the watch of the call's context while the call is watched
	cwPrev, cwNext *waiter   // the watch's list
	// sentAt is when the attempt in flight was sent; while the waiter is idle, when its last (refused) attempt was:
	// a grant by someone else's script came after that attempt ran, so its lease counts from there at the latest.
	sentAt time.Duration
}

// init prepares a waiter for a call starting now. wait < 0 waits as long as the context allows; 0 makes one
// attempt.
func (w *waiter) init(sh *shard, call waitCall, wait time.Duration) {
	w.sh, w.call = sh, call
	w.startAt = sh.c.now()
	switch {
	case wait == 0:
		w.noWait = true
	case wait > 0:
		w.deadline = w.startAt + wait
	}
}

// startLocked begins a new call: it marks it attempting (and reports true: the caller sends the attempt after
// releasing the shard mutex), or, when the call queues on the server and this client already has waiters for the
// same lock, joins the tail of the local queue (and reports false) without a command: the client's first waiter
// holds its place in the server's queue. barge lets a call attempt whatever the rule (a lock's re-entry, which
// would otherwise wait for its own owner). now is a clock reading taken just before, by the caller (the call's
// start, when it starts at once): it stands for the attempt's sending time, saving a reading on every acquire (an
// earlier sending time only moves the lease's local end earlier).
func (w *waiter) startLocked(barge bool, now time.Duration) bool {
	if w.serverQueue && !barge && !w.noWait {
		if q := w.sh.queueOfLocked(w); q != nil && q.n > 0 {
			// Behind this client's waiters: the first of them speaks for the client on the server, and a
			// release of this client passes the lock along them (queue.takeNextLocked).
			w.sh.c.joinLocked(w)
			w.state = wIdle
			w.armLocked(0)
			return false
		}
	}
	w.beginAttemptAtLocked(now)
	return true
}

// beginAttemptLocked marks w as attempting; the caller sends the attempt after releasing the shard mutex. The
// timer keeps only the wait's deadline, which bounds the call also while the attempt is in flight.
func (w *waiter) beginAttemptLocked() { w.beginAttemptAtLocked(w.sh.c.now()) }

// beginAttemptAtLocked is beginAttemptLocked with the clock read at now (at most the moment of sending).
func (w *waiter) beginAttemptAtLocked(now time.Duration) {
	w.state = wAttempting
	w.sentAt = now
	w.armLocked(0)
}

// settle applies the outcome of w's attempt, or of a grant by someone else's script naming it. It runs on the
// event loop that received the reply, or on the timer's worker.
func (w *waiter) settle(o outcome, _ bool) {
	c, sh := w.sh.c, w.sh
	sh.mu.Lock()
	if w.takeLeaveDueLocked() {
		defer c.leaves.done() // after the departure this settling starts has been counted
	}
	if w.state != wAttempting {
		// Close took it away while the command was in flight, or a grant message settled it first.
		sh.mu.Unlock()
		if o.granted {
			w.call.undo(o)
		}
		return
	}
	if o.requeued {
		w.grantNews |= grantsDoubted
	}
	if w.grantNews&grantAnnounced != 0 && !o.granted && o.err == nil {
		// A grant was announced while this attempt was in flight, and the attempt was refused: it ran before the
		// grant (it would have found and claimed the hold otherwise), so the grant's lease counts from its sending
		// at the latest — unless the call was ever queued again: the grant may then be one whose lease ended
		// before the attempt ran, and the next attempt claims it if it is live. (An attempt that failed leaves the
		// queue instead, which gives the grant back.)
		w.grantNews &^= grantAnnounced
		if w.grantNews&grantsDoubted != 0 {
			w.again = true
		} else {
			o = w.call.(*lockCall).grantedByOther()
		}
	}
	if o.err != nil {
		if w.retryLocked(o.err) {
			sh.mu.Unlock()
			return
		}
		act := w.leaveLocked(false)
		ambiguous := errors.Is(o.err, conn.ErrConnLost)
		failWith := c.mapErr(o.err)
		switch {
		case w.abandoned != nil:
			failWith = w.abandoned // the future failed with it already
		case ambiguous:
			failWith = w.call.unknownOutcome(o.err)
		}
		queued := w.queued
		sh.mu.Unlock()
		act.run()
		// The caller learns the outcome only once the departure from the server's queue was sent, and a lost
		// grant's release begun. It does not wait for their answers, as a call that gave up does (leftThenFail):
		// the transport failed, and the next answer may be as late.
		switch {
		case ambiguous:
			w.call.lostInFlight()
		case queued || !w.serverQueue:
			w.call.left(nil)
		}
		w.call.fail(failWith)
		return
	}
	if o.granted {
		h, err := w.call.grantLocked(o)
		act := w.leaveLocked(err == nil)
		sh.mu.Unlock()
		act.run()
		if err != nil {
			w.call.fail(err)
			w.call.undo(o)
			return
		}
		w.call.succeed(o, h)
		return
	}

	// Refused.
	if o.queued {
		w.queued = true
	}
	now := c.now()
	if w.abandoned != nil || w.noWait ||
		(w.deadline != 0 && (now >= w.deadline || (o.hopeless && now+o.bound > w.deadline))) {
		act := w.leaveLocked(false)
		failWith, abandoned := error(ErrNotAcquired), w.abandoned != nil
		if abandoned {
			failWith = w.abandoned
		}
		queued := w.queued
		sh.mu.Unlock()
		act.run()
		leaving := queued || !w.serverQueue
		if leaving && !abandoned {
			w.leftThenFail(failWith, false)
			return
		}
		if leaving {
			w.call.left(nil) // abandon fails the future (this fail may come first): nobody waits for the answer
		}
		w.call.fail(failWith)
		return
	}
	w.retries = 0
	w.state = wIdle
	q, joined, subscribe := w.q, false, false
	if q == nil {
		q, subscribe = c.joinLocked(w)
		joined = true
		if w.serverQueue {
			if granted, found := q.takePendingLocked(w); found {
				if granted && w.grantNews&grantsDoubted == 0 {
					// Announced before this refusal arrived: the attempt ran before the grant.
					w.state = wAttempting
					sh.mu.Unlock()
					if subscribe {
						c.subscribe(q)
					}
					w.call.(*lockCall).settle(w.call.(*lockCall).grantedByOther(), false)
					return
				}
				w.again = true
			}
		}
	}
	attempt := false
	switch {
	case q.key == "":
		w.armLocked(o.bound) // woken by its bound alone
	case !q.subscribed:
		// Wait for the subscription's confirmation, which wakes the head; bounded meanwhile.
		if q.head == w || w.serverQueue {
			w.armLocked(o.bound)
		} else {
			w.armLocked(0)
		}
	case w.again:
		attempt = true
	case joined && w.rule != wakeOne:
		// A wake-up published between the refusal and the join reached the others, not this call: look again
		// now that it cannot be missed any more. (A lock's new waiter need not: the head acts for it.)
		attempt = true
	case q.head == w || w.serverQueue:
		w.armLocked(o.bound)
	default:
		w.armLocked(0) // its deadline only: the head's progress moves it
	}
	if attempt {
		w.again = false
		w.beginAttemptLocked()
	}
	sh.mu.Unlock()
	if subscribe {
		c.subscribe(q)
	}
	if attempt {
		w.call.send()
	}
}

// retryLocked schedules a resend of w's failed attempt when that is safe: an attempt never sent (ErrUnavailable)
// is resent as it is, and so is a read-only one that may have run (ErrConnLost); an attempt that may have taken
// something is not (a second grant would count twice).
func (w *waiter) retryLocked(err error) bool {
	c := w.sh.c
	safe := errors.Is(err, conn.ErrUnavailable) || (w.resend && errors.Is(err, conn.ErrConnLost))
	if !safe || int(w.retries) >= c.cfg.RetryAttempts || w.abandoned != nil {
		return false
	}
	w.retries++
	return c.after(c.cfg.RetryDelay, func(closed bool) {
		if closed {
			w.settle(outcome{err: ErrClosed}, false)
			return
		}
		w.sh.mu.Lock()
		ok := w.state == wAttempting
		abandoned := w.abandoned != nil
		if ok {
			w.sentAt = c.now()
		}
		w.sh.mu.Unlock()
		switch {
		case ok && abandoned:
			// Abandoned meanwhile: the attempt that failed was never sent, so the call ends as refused.
			w.settle(outcome{bound: time.Millisecond}, false)
		case ok:
			w.call.send()
		}
	})
}

// leaveAction is what must follow a waiter's departure from a queue, once the shard mutex is released.
type leaveAction struct {
	empty    *queue      // the queue emptied: close its subscription
	attempt  *waiter     // the new head, to attempt now (state wAttempting)
	attempt2 *waiter     // a waiter an unused wake-up was passed to (state wAttempting)
	unwatch  func() bool // unregisters the watch of the waiter's context, which nothing else watched
}

func (a leaveAction) run() {
	if a.unwatch != nil {
		a.unwatch()
	}
	if a.empty != nil {
		a.empty.closeSubscription()
	}
	if a.attempt != nil {
		a.attempt.call.send()
	}
	if a.attempt2 != nil {
		a.attempt2.call.send()
	}
}

// leaveLocked marks w done and takes it out of its queue. When w was the head, the next waiter becomes head: if w
// was granted an exclusive lock, the new head waits for its release (a hand-off or a message), bounded by w's lease
// in case the holder vanishes; otherwise it attempts at once (once the subscription is confirmed). A wake-up w
// received but did not use goes to the next idle waiter.
func (w *waiter) leaveLocked(granted bool) leaveAction {
	w.state = wDone
	w.stopTimerLocked()
	unwatch := w.unwatchLocked()
	passWake := w.again && !granted
	w.again = false
	q := w.q
	if q == nil {
		return leaveAction{unwatch: unwatch}
	}
	after := w.next
	empty, wasHead := q.leaveLocked(w)
	if empty != nil {
		return leaveAction{empty: empty, unwatch: unwatch}
	}
	act := leaveAction{unwatch: unwatch}
	if wasHead && q.head != nil {
		nh := q.head
		switch {
		case nh.state != wIdle || q.key == "" || nh.queued:
			// Busy, or a timer-only waiter, or one queued on the server: each keeps its own bound.
		case granted && w.exclusive:
			// This client holds the lock now: its release names nh as the next waiter (lockqueue.go), bounded
			// by the lease in case the holder vanishes.
			nh.armLocked(w.call.(*lockCall).lease) // only locks are exclusive
		case w.serverQueue && q.holdBack > q.c.now():
			nh.armLocked(q.holdBack - q.c.now())
		case q.subscribed || w.serverQueue:
			// (A lock waiter's attempt queues it on the server; a grant it may miss before the subscription is
			// confirmed is claimed by the attempt the confirmation sends.)
			nh.again = false
			nh.beginAttemptLocked()
			act.attempt = nh
		default:
			nh.armLocked(recheckBound)
		}
		after = nh
	}
	if passWake && q.subscribed && q.key != "" {
		for x := after; x != nil; x = x.next {
			if x == act.attempt {
				break // woken already
			}
			if x.state == wIdle {
				x.beginAttemptLocked()
				act.attempt2 = x
				break
			}
			if x.state == wAttempting {
				x.again = true
				break
			}
		}
	}
	return act
}

// armLocked arms w's timer at its wait deadline, or earlier after bound when bound > 0. With neither, w has no
// timer (a waiter behind the head of a queue, without deadline: the head's progress moves it).
func (w *waiter) armLocked(bound time.Duration) {
	if bound > recheckBound && w.q != nil && w.q.key != "" {
		bound = w.sh.c.capBound(bound) // no message may come: see pubsubdenied.go
	}
	if bound <= 0 && w.deadline == 0 {
		w.stopTimerLocked() // nothing to arm, and no clock to read
		return
	}
	now := w.sh.c.now()
	at, atDeadline := time.Duration(-1), false
	if bound > 0 {
		at = now + bound
	}
	if w.deadline != 0 && (at < 0 || w.deadline <= at) {
		at, atDeadline = w.deadline, true
	}
	if at < 0 {
		w.stopTimerLocked()
		return
	}
	if atDeadline && w.tm != nil && w.tmDeadline {
		return // armed already: the deadline's timer is kept across attempts
	}
	w.stopTimerLocked()
	if tm, err := w.sh.c.waitTimer(at-now).NewTimeout(w, max(at-now, 0)); err == nil {
		w.tm, w.tmDeadline = tm, atDeadline
	}
}

func (w *waiter) stopTimerLocked() {
	if w.tm != nil {
		w.tm.Cancel()
		w.tm = nil
	}
}

// Run is w's timer task: its wait ran out, or its bound passed (it attempts again). It runs on the timer's
// worker.
func (w *waiter) Run(t *timer.Timeout) {
	sh := w.sh
	sh.mu.Lock()
	if w.tm != t {
		sh.mu.Unlock()
		return
	}
	w.tm = nil
	if now := w.sh.c.now(); w.deadline != 0 && now >= w.deadline {
		if (w.state == wAttempting || w.state == wGranting) && now < w.deadline+inFlightGrace && w.abandoned == nil {
			// An attempt (or a release naming the call) is in flight: its reply, due any moment from a server that
			// answers, tells whether the call was granted. Wait for it a little, so that a wait ending during a
			// round trip is not reported as an unknown outcome.
			grace := w.deadline + inFlightGrace - now
			if tm, err := w.sh.c.waitTimer(grace).NewTimeout(w, grace); err == nil {
				w.tm, w.tmDeadline = tm, false
				sh.mu.Unlock()
				return
			}
		}
		// Abandoned under the same hold of the mutex: released in between, a wake-up could send an attempt, and
		// a wait that ran out while idle would be reported as an attempt left unanswered.
		w.abandonLocked(ErrNotAcquired, false)
		return
	}
	if w.state == wIdle && w.q != nil {
		w.again = false
		w.beginAttemptLocked()
		sh.mu.Unlock()
		w.call.send()
		return
	}
	w.armLocked(0)
	sh.mu.Unlock()
}

var _ timer.Task = (*waiter)(nil)

package rlock

import (
	"context"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/timer"
)

// Waiting, for every member of the family (Redisson's pattern, without a goroutine per waiter):
//
//  1. The call sends an attempt. Granted: done.
//  2. Refused: the call joins its channel's local queue. The first waiter of a channel subscribes to it
//     (conn counts one subscription per channel per client). Once the subscription is confirmed the call attempts
//     again, so that a release published before it was subscribed is not missed (Redisson #1763).
//  3. Refused again: the call waits, idle, until a message wakes it (each object chooses whom a message wakes:
//     the first waiter for a lock, enough waiters for the permits published for a semaphore, all of them for a
//     latch or a write unlock), or until its bound passes: the lease the refusal reported (a lost message costs
//     at most that), or its wait's end. A message that arrives while its attempt is in flight makes it attempt
//     again at once instead of waiting (Redisson's latch permit, as one flag).
//  4. The last waiter to leave a channel closes the subscription.
//
// A call whose context ends, or whose wait runs out, leaves at once; if the server granted it in flight, what it
// was granted is given back (the lock released, the permits returned).

// famWaitState is the life cycle of a waiting call. Legal transitions, under the family mutex:
//
//	fwAttempting -> fwIdle        refused: waiting for a message or its timer
//	fwIdle       -> fwAttempting  woken by a message, the subscription's confirmation or its timer
//	any          -> fwDone        granted, failed, gave up (context, wait), or the client closed
type famWaitState uint8

const (
	fwAttempting famWaitState = iota
	fwIdle
	fwDone
)

// famWake says whom a message on a channel wakes.
type famWake uint8

const (
	wakeHead    famWake = iota // the first waiter: a lock was released, one waiter can take it
	wakeEvery                  // every waiter: a latch opened
	wakePermits                // as many waiters, in order, as the published number of permits covers
	wakeRW                     // "1" (a write unlock) every waiter, anything else the first
)

// famRun is the typed half of a waiting call, seen by the untyped engine.
type famRun interface {
	attempt()       // send one attempt; the state is already fwAttempting; called without the family mutex
	fail(err error) // complete the call with err (the client closed)
	expire()        // the wait ran out
}

// famWait is the untyped half of a waiting call: its place in its channel's queue, its state and its timer.
type famWait struct {
	f        *family
	run      famRun
	chName   string
	policy   famWake
	need     int64         // permits wanted (wakePermits)
	deadline time.Duration // on c.now(); 0 = no bound but the context
	noWait   bool          // one attempt only

	// Guarded by the family mutex.
	state      famWaitState
	again      bool // woken while an attempt was in flight: attempt again at once
	abandoned  bool // the caller's future failed (context, wait) while an attempt was in flight
	ch         *famChannel
	prev, next *famWait
	tm         *timer.Timeout
}

// famChannel is one channel's local queue of waiters and its subscription. Guarded by the family mutex.
type famChannel struct {
	f          *family
	name       string
	policy     famWake
	head, tail *famWait
	n          int
	sub        *conn.Subscription
	subscribed bool // confirmed, or failed (then failed is set and waiters fall back on their timers)
	failed     bool
	dead       bool // removed from the family: a late subscription is closed at once
}

// famNoSignalRetry bounds the wait of a call that has no other bound when its channel could not be subscribed
// (the server refused SUBSCRIBE, or the connection is down), or when a lock key has no expiry: without messages it
// would otherwise never retry.
const famNoSignalRetry = time.Second

// joinLocked appends w to the queue of its channel, creating the channel when w is its first waiter; it reports
// whether the caller must subscribe (after releasing the family mutex).
func (f *family) joinLocked(w *famWait) (ch *famChannel, subscribe bool) {
	ch = f.chans[w.chName]
	if ch == nil {
		ch = &famChannel{f: f, name: w.chName, policy: w.policy}
		f.chans[w.chName] = ch
		subscribe = true
	}
	w.ch = ch
	w.prev, w.next = ch.tail, nil
	if ch.tail != nil {
		ch.tail.next = w
	} else {
		ch.head = w
	}
	ch.tail = w
	ch.n++
	return ch, subscribe
}

// leaveLocked unlinks w from its channel; it returns the subscription to close when the channel emptied.
func (w *famWait) leaveLocked() *conn.Subscription {
	ch := w.ch
	if ch == nil {
		return nil
	}
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		ch.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		ch.tail = w.prev
	}
	w.prev, w.next, w.ch = nil, nil, nil
	ch.n--
	if ch.n > 0 {
		return nil
	}
	ch.dead = true
	if ch.f.chans[ch.name] == ch {
		delete(ch.f.chans, ch.name)
	}
	s := ch.sub
	ch.sub = nil
	return s
}

// famLeave is what follows a waiter's departure once the family mutex is released.
type famLeave struct {
	close *conn.Subscription
	wake  *famWait // a waiter to attempt now (state fwAttempting)
}

func (a famLeave) run() {
	if a.close != nil {
		a.close.Close()
	}
	if a.wake != nil {
		a.wake.run.attempt()
	}
}

// finishLocked marks w done and takes it out of its channel. A wake-up w received but did not use (it leaves
// without being granted) goes to the next waiter.
func (w *famWait) finishLocked(granted bool) famLeave {
	w.state = fwDone
	delete(w.f.waits, w)
	w.stopTimerLocked()
	ch := w.ch
	pass := w.again && !granted && ch != nil
	w.again = false
	var next *famWait
	if pass {
		next = w.next
		if next == nil && ch.head != w {
			next = ch.head
		}
	}
	act := famLeave{close: w.leaveLocked()}
	if next != nil {
		if next.state == fwIdle {
			next.beginLocked()
			act.wake = next
		} else {
			next.again = true
		}
	}
	return act
}

func (w *famWait) beginLocked() {
	w.stopTimerLocked()
	w.state = fwAttempting
}

func (w *famWait) stopTimerLocked() {
	if w.tm != nil {
		w.tm.Cancel()
		w.tm = nil
	}
}

// armLocked arms w's timer at bound (when bound > 0) or its deadline, whichever comes first. bound < 0 means no
// bound (woken by messages only) unless the channel could not be subscribed.
func (w *famWait) armLocked(bound time.Duration) {
	w.stopTimerLocked()
	if bound < 0 && w.ch != nil && w.ch.failed {
		bound = famNoSignalRetry
	}
	d := time.Duration(-1)
	if bound >= 0 {
		d = max(bound, time.Millisecond)
	}
	if w.deadline != 0 {
		if left := w.deadline - w.f.c.now(); d < 0 || left < d {
			d = max(left, 0)
		}
	}
	if d < 0 {
		return
	}
	if tm, err := w.f.c.timer.NewTimeout(w, d); err == nil {
		w.tm = tm
	}
}

// Run is w's timer task: its bound or its deadline passed. It runs on the timer's worker.
func (w *famWait) Run(t *timer.Timeout) {
	f := w.f
	f.mu.Lock()
	if w.tm != t || w.state != fwIdle {
		f.mu.Unlock()
		return
	}
	w.tm = nil
	if w.deadline != 0 && f.c.now() >= w.deadline {
		f.mu.Unlock()
		w.run.expire()
		return
	}
	w.beginLocked()
	f.mu.Unlock()
	w.run.attempt()
}

// subscribe subscribes ch. Once confirmed, every waiter of the channel attempts (again).
func (f *family) subscribe(ch *famChannel) {
	f.c.conn.Subscribe(ch.name, ch.onMessage).OnComplete(func(s *conn.Subscription, err error) {
		f.mu.Lock()
		if ch.dead {
			f.mu.Unlock()
			if s != nil {
				s.Close()
			}
			return
		}
		ch.sub = s
		ch.subscribed = true
		ch.failed = err != nil
		wake := ch.wakeLocked(-1)
		f.mu.Unlock()
		if err != nil && !f.isClosed() {
			f.c.log.Warn("rlock: cannot subscribe; waiters retry on their timers", "channel", ch.name, "err", err)
		}
		for _, w := range wake {
			w.run.attempt()
		}
	})
}

// onMessage handles a message on ch (or the news that it was subscribed again after a reconnect, when messages
// may have been lost: every waiter re-checks). It runs on the event loop and does not block.
func (ch *famChannel) onMessage(m conn.Message) {
	f := ch.f
	f.mu.Lock()
	if ch.dead {
		f.mu.Unlock()
		return
	}
	budget := int64(-1) // every waiter
	if m.Kind == conn.KindMessage {
		switch ch.policy {
		case wakeHead:
			budget = 1
		case wakeRW:
			if m.Payload != "1" {
				budget = 1
			}
		case wakePermits:
			if n, err := strconv.ParseInt(m.Payload, 10, 64); err == nil {
				budget = max(n, 0)
			}
		}
	}
	if ch.policy != wakePermits && budget == 1 {
		budget = -2 // the head only, whatever it needs
	}
	wake := ch.wakeLocked(budget)
	f.mu.Unlock()
	for _, w := range wake {
		w.run.attempt()
	}
}

// wakeLocked wakes waiters in queue order: all of them (budget -1), the first (-2), or as many as budget permits
// cover. Idle ones are returned to attempt (after the mutex is released); those with an attempt in flight are
// told to attempt again.
func (ch *famChannel) wakeLocked(budget int64) []*famWait {
	var wake []*famWait
	for w := ch.head; w != nil; w = w.next {
		if budget >= 0 {
			if budget < max(w.need, 1) {
				break
			}
			budget -= max(w.need, 1)
		}
		if w.state == fwIdle {
			w.beginLocked()
			wake = append(wake, w)
		} else if w.state == fwAttempting {
			w.again = true
		}
		if budget == -2 {
			break
		}
	}
	return wake
}

// famTry is the outcome of one attempt: granted with a value, or refused with a bound on the wait before the next
// attempt (negative: none, wait for a message).
type famTry[T any] struct {
	ok    bool
	v     T
	retry time.Duration
	// hopeless: refused, and retry is the earliest moment it could succeed (nothing else can make it succeed
	// sooner): a call whose wait ends before then gives up at once instead of waiting for a known failure.
	hopeless bool
}

// famWaiter is one waiting call returning T.
type famWaiter[T any] struct {
	famWait
	p       future.Promise[T]
	try     func(w *famWait) *future.Future[famTry[T]] // sends one attempt
	undo    func(T)                                    // gives back a grant nobody will see; may be nil
	gone    func()                                     // tells the server the call gave up (the fair lock's queue); may be nil
	stopCtx func() bool
}

// famWaitSpec describes a waiting call.
type famWaitSpec struct {
	channel string
	policy  famWake
	need    int64
	wait    time.Duration // < 0: no bound but the context; 0: one attempt; > 0: give up after wait
}

// startWait starts a waiting call. watch makes the call end when ctx ends (async calls; a sync call's Get watches
// ctx itself). The returned waiter is nil when the call failed before starting.
func startWait[T any](f *family, ctx context.Context, spec famWaitSpec, try func(w *famWait) *future.Future[famTry[T]],
	undo func(T), gone func(), watch bool) (*famWaiter[T], *future.Future[T]) {
	var zero T
	if f.isClosed() {
		return nil, future.Completed(zero, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, future.Completed(zero, err)
	}
	w := &famWaiter[T]{try: try, undo: undo, gone: gone}
	w.famWait = famWait{f: f, run: w, chName: spec.channel, policy: spec.policy, need: spec.need}
	switch {
	case spec.wait == 0:
		w.noWait = true
	case spec.wait > 0:
		w.deadline = f.c.now() + spec.wait
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, future.Completed(zero, ErrClosed)
	}
	f.waits[&w.famWait] = struct{}{}
	f.mu.Unlock()
	if watch && ctx.Done() != nil {
		// A registration, not a goroutine (for standard contexts): the callback gets one only when ctx ends.
		w.stopCtx = context.AfterFunc(ctx, func() { w.abandon(ctx.Err(), false) })
	}
	w.attempt()
	return w, w.p.Future()
}

// waitSync completes a blocking call: Get on the call's future, and on an early return (ctx ended) the call is
// abandoned and a grant that raced with it given back.
func waitSync[T any](ctx context.Context, w *famWaiter[T], fut *future.Future[T]) (T, error) {
	v, err := fut.Get(ctx)
	if err != nil && w != nil {
		w.abandon(err, true)
		if ctx.Err() != nil {
			var zero T
			return zero, ctx.Err()
		}
	}
	return v, err
}

func (w *famWaiter[T]) attempt() { w.try(&w.famWait).OnComplete(w.onTry) }

func (w *famWaiter[T]) fail(err error) {
	if w.p.Fail(famErr(err)) {
		w.stopWatch()
	}
}

func (w *famWaiter[T]) expire() { w.abandon(ErrNotAcquired, false) }

func (w *famWaiter[T]) stopWatch() {
	if w.stopCtx != nil {
		w.stopCtx()
	}
}

// onTry applies an attempt's outcome. It runs on the event loop that received the reply.
func (w *famWaiter[T]) onTry(r famTry[T], err error) {
	f := w.f
	f.mu.Lock()
	if w.state != fwAttempting {
		// The client closed while the attempt was in flight.
		f.mu.Unlock()
		if err == nil && r.ok && w.undo != nil {
			w.undo(r.v)
		}
		return
	}
	if err != nil || r.ok {
		act := w.finishLocked(err == nil)
		f.mu.Unlock()
		act.run()
		if err != nil {
			w.giveUp()
			w.fail(err)
			return
		}
		if !w.p.Succeed(r.v) {
			if w.undo != nil {
				w.undo(r.v)
			}
			return
		}
		w.stopWatch()
		return
	}
	// Refused.
	now := f.c.now()
	if w.abandoned || w.noWait || (w.deadline != 0 && (now >= w.deadline || (r.hopeless && now+r.retry > w.deadline))) ||
		f.closed {
		act := w.finishLocked(false)
		f.mu.Unlock()
		act.run()
		w.giveUp()
		if f.closed {
			w.fail(ErrClosed)
		} else {
			w.fail(ErrNotAcquired) // no effect when abandoned: the future failed already
		}
		return
	}
	if w.chName == "" {
		// No channel: the retry bound is the only wake-up (the rate limiter's waits).
		w.state = fwIdle
		w.armLocked(r.retry)
		f.mu.Unlock()
		return
	}
	if w.ch == nil {
		ch, subscribe := f.joinLocked(&w.famWait)
		if !subscribe && ch.subscribed {
			// Subscribed already, but maybe only after this attempt ran: attempt once more, now that a release
			// cannot be missed any more.
			f.mu.Unlock()
			w.attempt()
			return
		}
		w.state = fwIdle
		w.armLocked(-1) // the deadline only, until the subscription is confirmed
		f.mu.Unlock()
		if subscribe {
			f.subscribe(ch)
		}
		return
	}
	if w.again {
		w.again = false
		f.mu.Unlock()
		w.attempt()
		return
	}
	w.state = fwIdle
	w.armLocked(r.retry)
	f.mu.Unlock()
}

// abandon ends the call with err because its context ended or its wait ran out. When the call had already
// completed with a grant, the grant is given back if release is true (a blocking call whose caller never sees it).
func (w *famWaiter[T]) abandon(err error, release bool) {
	if !w.p.Fail(err) {
		if v, ferr, _ := w.p.Future().Peek(); release && ferr == nil && w.undo != nil {
			w.undo(v)
		}
		return
	}
	w.stopWatch()
	f := w.f
	f.mu.Lock()
	switch w.state {
	case fwIdle:
		act := w.finishLocked(false)
		f.mu.Unlock()
		act.run()
		w.giveUp()
		return
	case fwAttempting:
		// The reply cleans up: a grant is given back (Succeed fails), a refusal leaves the queue.
		w.abandoned = true
		w.stopTimerLocked()
	}
	f.mu.Unlock()
}

// giveUp tells the server the call left, when the object keeps waiters on the server (the fair lock).
func (w *famWaiter[T]) giveUp() {
	if w.gone != nil && !w.noWait && !w.f.isClosed() {
		w.gone()
	}
}

var (
	_ timer.Task = (*famWait)(nil)
	_ famRun     = (*famWaiter[struct{}])(nil)
)

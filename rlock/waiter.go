package rlock

import (
	"context"
	"errors"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/timer"
)

// waiterState is the life cycle of one acquire call. Legal transitions, under the shard mutex:
//
//	wNew        -> wAttempting  the first attempt is sent (or it waits for a release of the same owner first)
//	wNew        -> wIdle        it joined the tail of a queue with waiters (no barging)
//	wAttempting -> wIdle        refused: queued (or stays queued), waiting for a release or its TTL bound
//	wIdle       -> wAttempting  woken as head: unlock message, TTL bound, subscription confirmed
//	wIdle       -> wGranting    an Unlock of this client hands it the lock
//	wGranting   -> wIdle        the hand-off could not grant it
//	any         -> wDone        granted, failed, or left (context ended, wait ran out, Close)
type waiterState uint8

const (
	wNew waiterState = iota
	wIdle
	wAttempting
	wGranting
	wDone
)

// waiter is one acquire call in progress: Lock, LockLease or TryLock, sync or async. It is driven entirely by
// callbacks (attempt replies, unlock messages, its timeout), so an async acquire holds no goroutine while it waits.
// The caller's future lives inside it: one allocation per acquire call.
type waiter struct {
	p  future.Promise[context.Context]
	c  *Client
	lk *Lock
	// ctx is the caller's context, kept for the duration of the call only: it becomes the parent of the held
	// context (for its values) when the lock is granted. Its cancellation is watched by the caller's Get (sync
	// calls) or by context.AfterFunc (async calls), never by this struct.
	ctx      context.Context
	own      owner
	lease    time.Duration
	leaseArg string
	watchdog bool
	noWait   bool          // TryLock with wait 0: one attempt
	start    time.Duration // on c.now()
	deadline time.Duration // on c.now(); 0 = wait as long as the context allows
	stopCtx  func() bool   // stops the AfterFunc of an async call; set before the waiter is shared

	// Guarded by the shard mutex.
	state      waiterState
	abandoned  error // why the call was abandoned (context, wait) while a command for it was in flight; nil if not
	q          *queue
	prev, next *waiter
	tm         *timer.Timeout
	sentAt     time.Duration // when the attempt or hand-off in flight was sent
	retries    int
}

// acqResult is the decoded outcome of an acquire attempt or of the grant half of a hand-off.
type acqResult struct {
	granted bool
	count   int64         // hold count after the grant
	ttl     time.Duration // refused: the holder's remaining lease (-1 ms: no expiry)
	err     error
	skipped bool // hand-off only: the releasing owner still holds the lock, no grant was tried
}

// parseAcquire decodes an acquireSrc reply (or a hand-off's grant element).
func parseAcquire(v resp.Value, err error) acqResult {
	if err != nil {
		return acqResult{err: err}
	}
	switch {
	case v.Type == resp.BulkString && !v.Null:
		n, err := v.AsInt64()
		return acqResult{granted: err == nil, count: n, err: err}
	case v.Type == resp.Integer:
		return acqResult{ttl: time.Duration(v.Int) * time.Millisecond}
	case v.Null:
		return acqResult{skipped: true}
	}
	return acqResult{err: &resp.TypeError{Want: "hold count or PTTL", Got: v.Type}}
}

// beginAttemptLocked marks w as attempting; the caller sends the attempt after releasing the shard mutex.
func (w *waiter) beginAttemptLocked() {
	w.stopTimerLocked()
	w.state = wAttempting
	w.sentAt = w.c.now()
}

// sendAttempt sends one acquire attempt for w (state wAttempting). Called without the shard mutex.
func (w *waiter) sendAttempt() {
	w.c.conn.Eval(background, acquireScript, w.lk.keys[:1], w.leaseArg, w.own.id).OnComplete(w.onAttempt)
}

func (w *waiter) onAttempt(v resp.Value, err error) { w.onResult(parseAcquire(v, err), false) }

// onResult applies the outcome of w's attempt (or of a hand-off naming it). It runs on the event loop that
// received the reply, or on the timer's worker for a retry.
func (w *waiter) onResult(r acqResult, handoff bool) {
	c, sh := w.c, w.lk.sh
	sh.mu.Lock()
	if w.state != wAttempting && w.state != wGranting {
		// Close took it away while the command was in flight.
		sh.mu.Unlock()
		if r.granted {
			c.releaseOrphan(w, r.count)
		}
		return
	}
	if r.err != nil {
		if w.retryLocked(r.err, handoff) {
			sh.mu.Unlock()
			return
		}
		act := w.finishLocked(0)
		failWith := r.err
		if w.abandoned != nil {
			failWith = w.abandoned
		}
		sh.mu.Unlock()
		act.run()
		w.fail(failWith)
		if errors.Is(r.err, conn.ErrConnLost) && w.own.fresh {
			// The attempt may have been granted with nobody to know it. The owner id was made for this call, so
			// a hold under it can only be that grant: release it rather than leave it for the lease to end.
			c.releaseOrphan(w, 1)
		}
		return
	}
	if r.granted {
		h, herr := c.grantLocked(w, r.count, handoff)
		var act headAction
		if herr == nil {
			act = w.finishLocked(w.lease)
		} else {
			act = w.finishLocked(0)
		}
		sh.mu.Unlock()
		act.run()
		if herr != nil {
			w.fail(herr)
			c.releaseOrphan(w, r.count)
			return
		}
		w.succeed(h, handoff)
		return
	}

	// Refused (or a hand-off that did not get to grant).
	if w.abandoned != nil || w.noWait || (w.deadline != 0 && c.now() >= w.deadline) {
		act := w.finishLocked(0)
		failWith := error(ErrNotAcquired)
		if w.abandoned != nil {
			failWith = w.abandoned
		}
		sh.mu.Unlock()
		act.run()
		w.fail(failWith)
		return
	}
	w.retries = 0
	var subscribe bool
	q := w.q
	if q == nil {
		q, subscribe = c.enqueueLocked(w)
	}
	w.state = wIdle
	bound := r.ttl
	if r.skipped {
		bound = w.lease // the releasing owner still holds it: its release will hand off or publish
	}
	var retry bool
	if q.head == w && q.subscribed && q.wake {
		q.wake = false
		w.beginAttemptLocked()
		retry = true
	} else if q.head == w {
		w.armLocked(bound)
	} else {
		w.armLocked(0)
	}
	sh.mu.Unlock()
	if subscribe {
		c.subscribe(q)
	}
	if retry {
		w.sendAttempt()
	}
}

// retryLocked schedules a resend of w's failed command when that is safe: an attempt never sent (ErrUnavailable)
// is resent as it is; an attempt that may have run is not (a second grant would count twice), and a hand-off that
// failed is left to the releasing side, which retries it.
func (w *waiter) retryLocked(err error, handoff bool) bool {
	if handoff || !errors.Is(err, conn.ErrUnavailable) || w.retries >= w.c.cfg.RetryAttempts || w.abandoned != nil {
		return false
	}
	w.retries++
	tm, terr := w.c.timer.NewTimeout(timer.TaskFunc(func(*timer.Timeout) {
		w.lk.sh.mu.Lock()
		ok := w.state == wAttempting
		if ok {
			w.sentAt = w.c.now()
		}
		w.lk.sh.mu.Unlock()
		if ok {
			w.sendAttempt()
		}
	}), w.c.cfg.RetryDelay)
	return terr == nil && tm != nil
}

// headAction is what must follow a waiter's departure from a queue, once the shard mutex is released.
type headAction struct {
	head    *waiter // the new head, if any
	attempt *waiter // the new head, when it should retry now (state wAttempting)
	empty   *queue  // the queue emptied: close its subscription
}

func (a headAction) run() {
	if a.empty != nil {
		a.empty.closeSubscription()
	}
	if a.attempt != nil {
		a.attempt.sendAttempt()
	}
}

// finishLocked marks w done and takes it out of its queue. When w was the head, the next waiter becomes head.
// holderLease > 0 says the lock was just granted to w: the new head then waits for its release (a hand-off or a
// message), bounded by that lease in case the holder vanishes. Otherwise the new head retries at once.
func (w *waiter) finishLocked(holderLease time.Duration) headAction {
	w.state = wDone
	w.stopTimerLocked()
	q := w.q
	if q == nil {
		return headAction{}
	}
	empty, wasHead := q.leaveLocked(w)
	if empty != nil {
		return headAction{empty: empty}
	}
	if !wasHead {
		return headAction{}
	}
	nh := q.head
	act := headAction{head: nh}
	if nh.state != wIdle {
		return act
	}
	if holderLease > 0 {
		q.wake = false
		nh.armLocked(holderLease)
	} else if q.subscribed {
		q.wake = false
		nh.beginAttemptLocked()
		act.attempt = nh
	}
	return act
}

// armLocked arms w's timeout: at its wait deadline, or earlier at bound when bound > 0 (the head's TTL bound).
// A TTL of -1 (a key without expiry) is polled every noTTLRetry, so a waiter never hangs on it.
func (w *waiter) armLocked(bound time.Duration) {
	w.stopTimerLocked()
	now := w.c.now()
	var d time.Duration = -1
	if bound != 0 {
		if bound < 0 {
			bound = noTTLRetry
		}
		d = max(bound, time.Millisecond)
	}
	if w.deadline != 0 && (d < 0 || w.deadline-now < d) {
		d = max(w.deadline-now, 0)
	}
	if d < 0 {
		return // no bound, no deadline: woken by messages and hand-offs only (a non-head waiter of Lock)
	}
	if tm, err := w.c.timer.NewTimeout(w, d); err == nil {
		w.tm = tm
	}
}

// noTTLRetry is how often the head retries a lock whose key has no expiry (PTTL -1: written by something else
// than a lock client), since no lease bounds the wait.
const noTTLRetry = time.Second

func (w *waiter) stopTimerLocked() {
	if w.tm != nil {
		w.tm.Cancel()
		w.tm = nil
	}
}

// Run is w's timer task: its wait ran out, or (as head) the TTL of the last refusal passed. It runs on the
// timer's worker.
func (w *waiter) Run(t *timer.Timeout) {
	sh := w.lk.sh
	sh.mu.Lock()
	if w.tm != t {
		sh.mu.Unlock()
		return
	}
	w.tm = nil
	if w.deadline != 0 && w.c.now() >= w.deadline {
		sh.mu.Unlock()
		w.abandon(ErrNotAcquired, false)
		return
	}
	if w.state == wIdle && w.q != nil && w.q.head == w {
		w.beginAttemptLocked()
		sh.mu.Unlock()
		w.sendAttempt()
		return
	}
	w.armLocked(0)
	sh.mu.Unlock()
}

// abandon ends the call with err because its context ended or its wait ran out. The waiter leaves its queue
// before the future fails, so a caller that sees the error also sees the waiter gone. A command in flight for it
// finishes the job: a refusal just ends it, a grant is released. If the call already completed with the lock, the
// lock is released when release is true (a sync call whose caller will never see the held context); otherwise it
// belongs to whoever holds the future.
func (w *waiter) abandon(err error, release bool) {
	sh := w.lk.sh
	sh.mu.Lock()
	var act headAction
	switch w.state {
	case wIdle:
		act = w.finishLocked(0)
	case wAttempting, wGranting, wNew:
		if w.abandoned == nil {
			w.abandoned = err
		}
		w.stopTimerLocked()
	}
	sh.mu.Unlock()
	act.run()
	if w.p.Fail(err) {
		w.stopWatch()
		return
	}
	if !release {
		return
	}
	// Another completion won. Peek could still see the future pending (the winner publishes its result just
	// after winning), so wait for the result: it is being stored right now, Get returns at once.
	if held, ferr := w.p.Future().Get(background); ferr == nil && held != nil {
		w.c.unlockHeld(held)
	}
}

// succeed completes the call with the held context. If the caller's future was failed meanwhile (context ended
// or wait ran out while the grant was in flight), the lock granted in flight is released instead.
func (w *waiter) succeed(h *hold, handoff bool) {
	ev := AcquiredEvent{Name: w.lk.name, Owner: w.own.id, Wait: w.c.now() - w.start, Reentrant: h.count > 1,
		HandOff: handoff}
	if !w.p.Succeed(h.held) {
		w.c.unlockHeld(h.held)
		return
	}
	w.stopWatch()
	w.c.obs.Acquired(ev)
}

func (w *waiter) fail(err error) {
	if errors.Is(err, conn.ErrClosed) {
		err = ErrClosed
	}
	if w.p.Fail(err) {
		w.stopWatch()
	}
}

func (w *waiter) stopWatch() {
	if w.stopCtx != nil {
		w.stopCtx()
	}
}

// grantLocked records a grant to w's owner: a new hold, or a re-entry of the hold it has. Returns the hold.
func (c *Client) grantLocked(w *waiter, count int64, handoff bool) (*hold, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	sh := w.lk.sh
	if h := sh.holds[holdKey{w.lk.name, w.own.id}]; h != nil && h.state == holdHeld {
		return h, h.reenterLocked(count, w.lease, w.watchdog, w.sentAt)
	}
	return c.newHoldLocked(sh, w.lk.name, w.own.id, w.ctx, count, w.lease, w.watchdog, w.sentAt)
}

var _ timer.Task = (*waiter)(nil)

package rlock

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/locksmith-go/locksmith/future"
)

// How a waiter ends before it is granted: its caller's context ends or its wait runs out (abandon), while it idles
// in a queue or while an attempt of it is in flight, and what the blocking calls do when their Get returns early
// (waitSync).

// abandon ends the call with err because its context ended or its wait ran out. An idle waiter leaves its queue
// before the future fails, so a caller that sees the error also sees the waiter gone (leftThenFail). A command in
// flight for it finishes the job: a refusal just ends it, a grant is given back. If the call already completed
// with a grant, the grant is given back when release is true (a blocking call whose caller will never see it);
// otherwise it belongs to whoever holds the future.
func (w *waiter) abandon(err error, release bool) {
	w.sh.mu.Lock()
	w.abandonLocked(err, release)
}

// abandonLocked is abandon called with the shard mutex, which it releases.
func (w *waiter) abandonLocked(err error, release bool) {
	sh := w.sh
	var act leaveAction
	idle := w.state == wIdle
	inFlight := w.state == wAttempting || w.state == wGranting
	switch w.state {
	case wIdle:
		act = w.leaveLocked(false)
	case wAttempting, wGranting, wNew:
		if w.abandoned == nil {
			w.abandoned = err
		}
		w.stopTimerLocked()
		if w.state == wAttempting && w.serverQueue {
			sh.dueLeaveLocked(w)
		}
	}
	sh.mu.Unlock()
	act.run()
	if idle {
		w.leftThenFail(err, release)
		return
	}
	if inFlight && errors.Is(err, ErrNotAcquired) {
		// The wait ran out and the attempt in flight (or a release of this client naming the call) was not
		// answered within inFlightGrace: the caller holds nothing, but whether the server granted the lock is not
		// known. Its reply settles that later (a grant is given back, a lost reply's grant released: orphan.go).
		err = w.call.unknownOutcome(errWaitInFlight)
	}
	if w.call.fail(err) || !release {
		return
	}
	w.call.giveBackResult()
}

// leftThenFail tells the server that the idle call gave up (left) and fails it with err once the server answered,
// so that a caller that sees the error also sees its entry gone from the server's queue. Its next command (the
// Unlock of a lock it holds, a TryLock) may go out on another connection of the pool than the departure and be
// run first; a release would then grant the lock to the departed waiter, and the lock would look taken for a round
// trip, until the departure gives the grant back. The failure waits at most inFlightGrace for the answer (a server
// that stopped answering). When the call was complete already and release is true, its result is given back, as
// abandon does.
func (w *waiter) leftThenFail(err error, release bool) {
	var once atomic.Bool
	finish := func() {
		if once.Swap(true) {
			return
		}
		if !w.call.fail(err) && release {
			w.call.giveBackResult()
		}
	}
	// Either runs finish: the timer also when the client closes, the departure once answered or failed.
	w.sh.c.after(inFlightGrace, func(bool) { finish() })
	w.call.left(finish)
}

// runThen runs then when it is not nil: the continuation of a departure (waitCall.left).
func runThen(then func()) {
	if then != nil {
		then()
	}
}

// dueLeaveLocked records that w was abandoned while its attempt was in flight, an attempt that may queue it on the
// server: a leave is counted in flight (Client.leaves) until that attempt's outcome is settled, so that a Close
// that follows at once waits for the attempt's reply and for the departure the reply triggers. Rare, so it lives
// in a map of the shard rather than in every waiter. Called with the shard mutex.
func (sh *shard) dueLeaveLocked(w *waiter) {
	if _, ok := sh.dueLeaves[w]; ok {
		return
	}
	if sh.dueLeaves == nil {
		sh.dueLeaves = make(map[*waiter]struct{})
	}
	sh.dueLeaves[w] = struct{}{}
	sh.c.leaves.add()
}

// takeLeaveDueLocked reports whether a leave was counted in flight for w's abandoned attempt (dueLeaveLocked), and
// forgets it: the caller settles that attempt's outcome (starting the departure it needs, which counts itself)
// and then marks the counted leave done. Called with the shard mutex.
func (w *waiter) takeLeaveDueLocked() bool {
	if len(w.sh.dueLeaves) == 0 {
		return false
	}
	if _, ok := w.sh.dueLeaves[w]; !ok {
		return false
	}
	delete(w.sh.dueLeaves, w)
	return true
}

// waitSync completes a blocking call: Get on the call's future, and on an early return (ctx ended) the call is
// abandoned and a grant that raced with it given back. w is nil when the call failed before it started.
func waitSync[T any](ctx context.Context, w *waiter, f *future.Future[T]) (T, error) {
	v, err := f.Get(ctx)
	if err != nil && w != nil {
		w.abandon(err, true)
		if ctx.Err() != nil {
			var zero T
			return zero, ctx.Err()
		}
	}
	return v, err
}

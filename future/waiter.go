package future

import "sync"

// waiter parks one blocked Get call. Why not a channel per future: package conn
// aims at one allocation per Redis command in total, and that allocation is the
// promise. A per-future channel made on the first blocking Get would double it:
// a future completed by another goroutine while Get blocks costs one allocation
// this way (BenchmarkGetCompletedElsewhere) against two, and about twice the
// bytes, when waiting on the Done channel (BenchmarkDoneWaitCompletedElsewhere),
// for the same time per request (the goroutine hand-off dominates both; figures
// in bench/README.md, "future"). Instead
// a blocked Get borrows a waiter from a process-wide pool, links it into the
// future's list, and sleeps on its one-slot channel; the completer sends one
// token to each detached waiter. The channel is reused across futures because it
// is never closed: every token sent is received before the waiter goes back to
// the pool (Get drains the token it is owed even when its ctx ended first).
// sync.Pool may drop idle waiters at a GC; the next blocking Get then makes a
// new one (two allocations), which amortises to nothing. A sync.Cond would need
// no pool but cannot be combined with ctx.Done in a select.
//
// A waiter is owned by the Get call that took it from the pool until that call
// puts it back. While linked, next and prev are guarded by the future's mu; once
// the completer has detached the list, only the completer reads next, and it does
// so before sending the token (after the send the Get call may recycle w).
type waiter struct {
	wake       chan struct{} // capacity 1: the completer's send never blocks
	next, prev *waiter
}

var waiterPool = sync.Pool{
	New: func() any { return &waiter{wake: make(chan struct{}, 1)} },
}

func getWaiter() *waiter { return waiterPool.Get().(*waiter) }

// putWaiter returns w to the pool; w must be unlinked and its channel empty. A
// token left behind would wake the next Get that borrows w before its future
// completes, so that broken invariant panics here rather than there.
func putWaiter(w *waiter) {
	if len(w.wake) != 0 {
		panic("future: internal error: waiter returned to the pool with a pending wake-up")
	}
	w.next, w.prev = nil, nil
	waiterPool.Put(w)
}

// wakeAll sends one token to every waiter of a detached list.
func wakeAll(head *waiter) {
	for w := head; w != nil; {
		next := w.next // read before the send: afterwards Get may recycle w
		w.wake <- struct{}{}
		w = next
	}
}

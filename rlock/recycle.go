package rlock

import (
	"sync"
	"sync/atomic"
)

// Recycling the structs of blocking calls. A blocking Unlock allocates its op (about 290 bytes with the Relay its Get
// drives) and drops it a round trip later; at the sequential benchmark's rates (integration's BenchmarkUncontended)
// that churn was a tenth of the client's CPU (allocation, zeroing fresh spans, sweeping), which competes with
// redis-server for the same cores. Such a struct is reused once both parties that touch it are done with it:
//
//   - the caller, whose Get returned (it reads the result, then never touches the struct again), and
//   - the completion, which touches the struct until its promise's Complete has returned (Complete wakes the Get
//     first, then tells the driver and runs callbacks: the Get may return while the completer still runs).
//
// Each releases one of two references when done; the last one puts the struct back. A struct anybody else may
// still hold is never released by its completion and so never reused: the garbage collector takes it (an unlock
// op that an acquire of the same owner waits on, see unlockOp.observed). The atomic counter orders the first
// party's last access before the second party's reset.

// recycleRefs counts the parties still using a recycled struct.
type recycleRefs struct{ n atomic.Int32 }

// syncUnlockOps and syncLockCalls hold blocking calls' structs ready for reuse, zeroed.
var (
	syncUnlockOps = sync.Pool{New: func() any { return new(syncUnlockOp) }}
	syncLockCalls = sync.Pool{New: func() any { return new(syncLockCall) }}
)

// newSyncLockCall returns a zeroed blocking acquire call, wired to its Relay, with both references taken.
func newSyncLockCall() *syncLockCall {
	s := syncLockCalls.Get().(*syncLockCall)
	s.sync = s
	s.p.SetDriver(&s.steps)
	s.refs.n.Store(2)
	if s.onAttempt == nil {
		// Bound once for all the struct's uses: a method value passed to a future is an allocation each time.
		s.onAttempt = s.onAnyReply
	}
	return s
}

// releaseLockCall drops one reference to s; the last one zeroes s and puts it back for reuse.
func (r *recycleRefs) releaseLockCall(s *syncLockCall) {
	if r.n.Add(-1) != 0 {
		return
	}
	if hook := s.sh.c.recycled; hook != nil {
		hook(s)
	}
	cb := s.onAttempt
	*s = syncLockCall{onAttempt: cb}
	syncLockCalls.Put(s)
}

// newSyncUnlockOp returns a zeroed op for a blocking Unlock, wired to its Relay, with both references taken.
func newSyncUnlockOp() *syncUnlockOp {
	s := syncUnlockOps.Get().(*syncUnlockOp)
	s.sync = s
	s.p.SetDriver(&s.steps)
	s.refs.n.Store(2)
	if s.onAttempt == nil {
		s.onAttempt = s.onAnyReply // bound once (see newSyncLockCall)
	}
	return s
}

// release drops one reference to s; the last one zeroes s and puts it back for reuse.
func (r *recycleRefs) release(s *syncUnlockOp) {
	if r.n.Add(-1) != 0 {
		return
	}
	if hook := s.c.recycled; hook != nil {
		hook(s)
	}
	cb := s.onAttempt
	*s = syncUnlockOp{onAttempt: cb}
	syncUnlockOps.Put(s)
}

package rlock

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
	"unsafe"
)

type ctxKey struct{}

// The held context: the acquiring context's values, not its cancellation; a cause when cancelled; and contexts
// derived from it start no goroutine (issue 5: no goroutine per lock, ever).
func TestHeldContext(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	h := &hold{name: "n", owner: "u:1", parent: parent}
	held, cancel := context.WithCancelCause(h)
	h.held, h.cancel = held, cancel

	if held.Value(ctxKey{}) != "v" {
		t.Fatal("the acquiring context's value is not visible through the held context")
	}
	cancelParent()
	if held.Err() != nil {
		t.Fatal("cancelling the acquiring context cancelled the held context: it is the lease, not the request")
	}
	if _, ok := held.Deadline(); ok {
		t.Fatal("held context reports a deadline")
	}

	before := runtime.NumGoroutine()
	derived := make([]context.CancelFunc, 1000)
	for i := range derived {
		_, derived[i] = context.WithTimeout(held, time.Hour)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		t.Fatalf("deriving 1000 contexts from a held context started %d goroutines", n-before)
	}
	for _, stop := range derived {
		stop()
	}

	cancel(ErrLockLost)
	if !errors.Is(context.Cause(held), ErrLockLost) || !errors.Is(held.Err(), context.Canceled) {
		t.Fatalf("cause %v, err %v", context.Cause(held), held.Err())
	}
}

func TestExpireAtIsBeforeTheServerCanLetAnotherOwnerIn(t *testing.T) {
	for _, lease := range []time.Duration{time.Millisecond, 100 * time.Millisecond, 3 * time.Second, 30 * time.Second} {
		h := &hold{lease: lease, deadline: time.Hour}
		margin := h.deadline - h.expireAt()
		if margin <= 0 || margin > lease/10 {
			t.Errorf("lease %v: margin %v, want in (0, lease/10]", lease, margin)
		}
		if lease >= time.Second && margin < 20*time.Millisecond {
			t.Errorf("lease %v: margin %v is less than two timer ticks", lease, margin)
		}
	}
}

// Memory budgets of the hot structures, on 64-bit platforms. A held lock costs its hold plus its timeout, context
// and map entry (issue 5, W3: at most 0.5 KB of client heap per held lock, measured 450-490 B), so the hold must
// stay in the 128-byte size class; and every acquire allocates one lockCall, which must stay in the 320-byte class
// the plain lock's waiter had before the engine was shared with the lock family.
func TestHotStructuresStayInTheirSizeClasses(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are for 64-bit platforms")
	}
	if n := unsafe.Sizeof(hold{}); n > 128 {
		t.Errorf("hold is %d bytes, want at most 128", n)
	}
	if n := unsafe.Sizeof(lockCall{}); n > 320 {
		t.Errorf("lockCall is %d bytes, want at most 320", n)
	}
	if n := unsafe.Sizeof(unlockOp{}); n > 240 {
		t.Errorf("unlockOp is %d bytes, want at most 240", n)
	}
}

package future

import (
	"runtime"
	"sync/atomic"
)

// Blocking inside a callback.
//
// A callback runs on the goroutine that completes its future: in package conn a network event loop, the timing
// wheel's worker, or a Get that reads replies for other callers too (conn's latency lane). A callback that blocks
// waiting for another result stalls that goroutine, and when the result it waits for is one that goroutine would
// deliver, it waits forever. Go has no goroutine-local storage to mark such goroutines, so the mark is a stack
// frame: user code of a callback runs below runMarked, and InCallback looks for that frame on the calling
// goroutine's stack. The walk costs about 0.1 µs per frame, so it is made only while some goroutine is inside
// runMarked at all (marked > 0): a program that registers no callbacks pays one atomic load per check.

// marked counts the goroutines inside runMarked now, over the whole process (nested runs count once each).
var marked atomic.Int32

// markerPC is the return address of runMarked's call of its function: present among the return addresses of a
// goroutine's stack exactly while that goroutine runs code below runMarked.
var markerPC = func() uintptr {
	var pc [1]uintptr
	runMarked(func() {
		// Skip runtime.Callers and this function: the next frame is runMarked's.
		runtime.Callers(2, pc[:])
	})
	return pc[0]
}()

// runMarked runs fn as a callback: InCallback reports true inside it. It must not be inlined: its frame is the
// mark, found by its return address.
//
//go:noinline
func runMarked(fn func()) {
	marked.Add(1)
	defer marked.Add(-1)
	fn()
}

// RunAsCallback runs fn on the calling goroutine as a callback of this package runs: InCallback reports true
// inside it, so blocking calls that check it (Get on a pending future, package rlock's blocking calls) fail at once
// with ErrInCallback instead of stalling the goroutine. A library uses it around user code that it calls on a
// goroutine that must not block, such as an observer called from an event loop. It returns when fn returns; a
// panic in fn propagates. Safe for concurrent use; it allocates nothing when fn's closure does not escape.
func RunAsCallback(fn func()) {
	if fn != nil {
		runMarked(fn)
	}
}

// InCallback reports whether the calling goroutine is running a callback of this package (a function given to
// OnComplete, Then or Compose) or a function given to RunAsCallback, at any depth. Blocking calls use it to fail
// at once with ErrInCallback rather than wait for a result that the blocked goroutine itself may have to deliver.
//
// It does not block. It costs one atomic load while no goroutine runs a callback, and otherwise a walk of the
// calling goroutine's stack (about 0.1 µs per frame). Safe for concurrent use.
func InCallback() bool {
	if marked.Load() == 0 {
		return false
	}
	var pcs [32]uintptr
	for skip := 2; ; {
		n := runtime.Callers(skip, pcs[:])
		for _, pc := range pcs[:n] {
			if pc == markerPC {
				return true
			}
		}
		if n < len(pcs) {
			return false
		}
		skip += n
	}
}

package conn

import (
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"
)

// doorbell wakes one event loop to flush connections, without gnet's Wake.
//
// Why: gnet's Wake allocates a closure per call and queues a task; with FlushEager that was
// 0.10-0.15 extra allocations per command at G=64 here, over the budget of one (the promise). A doorbell is a Unix
// socketpair whose read end is enrolled into the loop like a connection: ringing it writes one byte (only when it
// is not already rung), and the loop's OnTraffic for it flushes every connection queued on it. Connections queue
// themselves on an intrusive lock-free stack, at most once at a time (gnetTransport.queued), so ringing allocates
// nothing.
//
// Doorbells exist on the Unix systems gnet runs its own epoll/kqueue loops on (doorbell_unix.go). Elsewhere, and
// in a build with the locksmith_portable tag, the engine has none and every connection falls back to gnet's Wake
// (doorbell_portable.go): the same flush, one closure allocation per wake-up.
type doorbell struct {
	//lint:ignore U1000 the portable build has no socketpair (doorbell_portable.go)
	wfd  int         // write end of the socketpair, non-blocking; closed by engine.stop after the loops exit
	rung atomic.Bool // a byte is (about to be) in flight; cleared by the loop before it drains the stack

	sounding atomic.Int32 // rings decided whose byte is not written yet; close waits for zero
	head     atomic.Pointer[gnetTransport]
	loop     gnet.EventLoop // the loop the read end is on; set by OnOpen before enroll returns
}

// ring queues t for a flush and reports whether the loop must be woken: it returns d when the caller must call
// d.sound() (after releasing t's pconn.mu), nil when the loop is already woken. Non-blocking; safe for concurrent
// use. The caller holds t's pconn.mu with the connection open, so the engine is running.
func (d *doorbell) ring(t *gnetTransport) *doorbell {
	// A connection may still be queued from an earlier ring when its own reader turn already flushed it (and
	// cleared flushPending); pushing it again would corrupt the stack. The answer that pops it will flush it.
	if !t.queued.CompareAndSwap(false, true) {
		return nil
	}
	for {
		old := d.head.Load()
		t.nextFlush = old
		if d.head.CompareAndSwap(old, t) {
			break
		}
	}
	if !d.rung.CompareAndSwap(false, true) {
		return nil
	}
	d.sounding.Add(1) // taken while the connection (and so the engine) is known to be alive; see close
	return d
}

// answer runs on the doorbell's loop (OnTraffic): consume the bytes, then flush every queued connection. rung is
// cleared before the stack is taken, so a connection queued after the take rings again.
func (d *doorbell) answer(c gnet.Conn) {
	if n := c.InboundBuffered(); n > 0 {
		_, _ = c.Discard(n)
	}
	d.rung.Store(false)
	t := d.head.Swap(nil)
	for t != nil {
		next := t.nextFlush
		t.nextFlush = nil
		t.queued.Store(false)
		t.flush()
		t = next
	}
}

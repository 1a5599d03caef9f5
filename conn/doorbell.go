package conn

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"

	"github.com/panjf2000/gnet/v2"
)

// doorbell wakes one event loop to flush connections, without gnet's Wake.
//
// Why: gnet's Wake allocates a closure per call (GNET-NOTES pitfall 7) and queues a task; with FlushEager that was
// 0.10-0.15 extra allocations per command at G=64 here, over the budget of one (the promise). A doorbell is a Unix
// socketpair whose read end is enrolled into the loop like a connection: ringing it writes one byte (only when it
// is not already rung), and the loop's OnTraffic for it flushes every connection queued on it. Connections queue
// themselves on an intrusive lock-free stack, at most once at a time (gnetTransport.queued), so ringing allocates
// nothing.
type doorbell struct {
	wfd  int         // write end of the socketpair, non-blocking; closed by engine.stop after the loops exit
	rung atomic.Bool // a byte is (about to be) in flight; cleared by the loop before it drains the stack

	sounding atomic.Int32 // rings decided whose byte is not written yet; close waits for zero
	head     atomic.Pointer[gnetTransport]
	loop     gnet.EventLoop // the loop the read end is on; set by OnOpen before enroll returns
}

var bellByte = []byte{1}

// newDoorbell creates a socketpair and enrolls its read end into one of the engine's loops.
func newDoorbell(cli *gnet.Client) (*doorbell, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("conn: doorbell socketpair: %w", err)
	}
	if err := syscall.SetNonblock(fds[1], true); err != nil {
		_ = syscall.Close(fds[0])
		_ = syscall.Close(fds[1])
		return nil, fmt.Errorf("conn: doorbell: %w", err)
	}
	f := os.NewFile(uintptr(fds[0]), "conn-doorbell")
	nc, err := net.FileConn(f) // duplicates the descriptor
	_ = f.Close()
	if err != nil {
		_ = syscall.Close(fds[1])
		return nil, fmt.Errorf("conn: doorbell: %w", err)
	}
	d := &doorbell{wfd: fds[1]}
	if _, err := cli.EnrollContext(nc, d); err != nil { // gnet duplicates again and closes nc
		_ = syscall.Close(fds[1])
		return nil, fmt.Errorf("conn: enrolling the doorbell: %w", err)
	}
	return d, nil
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

// sound writes the wake-up byte; a nil d does nothing. Called once per ring that returned d, without any pconn
// mutex held.
func (d *doorbell) sound() {
	if d == nil {
		return
	}
	// EAGAIN would mean the socket is full of unread bytes: the loop is due to wake anyway.
	_, _ = syscall.Write(d.wfd, bellByte)
	d.sounding.Add(-1)
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

// close closes the write end once no sound is pending (the read end is closed by gnet with the loop). By then
// every connection is closed, so no new ring can start; a caller between ring and sound finishes within a syscall.
func (d *doorbell) close() {
	for d.sounding.Load() != 0 {
		runtime.Gosched()
	}
	_ = syscall.Close(d.wfd)
}

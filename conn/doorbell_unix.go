//go:build (linux || darwin || dragonfly || freebsd || netbsd || openbsd) && !locksmith_portable

package conn

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"

	"github.com/panjf2000/gnet/v2"
)

var bellByte = []byte{1}

// startDoorbells creates one doorbell per event loop of e (gnet's client assigns connections to the loop with the
// fewest, so n doorbells land one per loop). On failure the doorbells made so far are in e.bells, closed by
// e.stop.
func (e *engine) startDoorbells(n int) error {
	for range n {
		d, err := newDoorbell(e.cli)
		if err != nil {
			return err
		}
		e.bells = append(e.bells, d)
	}
	return nil
}

// newDoorbell creates a socketpair and enrolls its read end into one of the engine's loops.
func newDoorbell(cli *gnet.Client) (*doorbell, error) {
	fds, err := bellSocketpair()
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

// close closes the write end once no sound is pending (the read end is closed by gnet with the loop). By then
// every connection is closed, so no new ring can start; a caller between ring and sound finishes within a syscall.
func (d *doorbell) close() {
	for d.sounding.Load() != 0 {
		runtime.Gosched()
	}
	_ = syscall.Close(d.wfd)
}

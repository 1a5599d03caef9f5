package conn

import (
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"time"
)

// streamTransport carries a connection with a reader goroutine and a writer goroutine over a net.Conn, using Go's
// own netpoller: every rediss:// connection (gnet has no TLS), and the latency lane of a
// plain-TCP node (see "Latency lane" in doc.go). The pipeline above (pconn) is the same as on an event loop:
// callers append under the mutex (and write directly when the connection is idle), the reader completes replies in
// FIFO order and ends each turn by kicking the writer if anything was appended, and the writer writes each
// accumulated batch in one Write.
type streamTransport struct {
	pc           *pconn
	nc           net.Conn // what is read and written: the *tls.Conn, or the TCP connection itself
	raw          net.Conn // the TCP connection under nc; closing it stops both goroutines
	writeTimeout time.Duration

	wake chan struct{} // capacity 1: a kick not yet seen by the writer
	done chan struct{} // closed by close: the writer exits (and the lane's idle background reader)
	once sync.Once

	// lane is set on the latency lane: who reads is decided there (a driving Get or the background reader).
	lane *laneReader

	// Owned by whoever reads (see readTurn): the read buffer. A reply longer than one read is kept by pconn.
	rbuf []byte
}

var _ transport = (*streamTransport)(nil)

// startStream starts the reader and writer goroutines of a handshaken connection. Both are owned by the Client and
// counted in wg. On the latency lane (lane set) the reader goroutine reads only when no Get drives the connection
// (see lane.go).
func startStream(nc, raw net.Conn, pc *pconn, wg *sync.WaitGroup, lane bool) *streamTransport {
	t := &streamTransport{
		pc:           pc,
		nc:           nc,
		raw:          raw,
		writeTimeout: pc.cfg.ResponseTimeout,
		wake:         make(chan struct{}, 1),
		done:         make(chan struct{}),
		rbuf:         make([]byte, 16<<10),
	}
	wg.Add(2)
	if lane {
		t.lane = newLaneReader(t)
		go t.lane.backgroundLoop(wg) // owner: the Client; exits when the connection fails or is closed
	} else {
		go t.readLoop(wg) // owner: the Client; exits when the connection fails or is closed
	}
	go t.writeLoop(wg) // owner: the Client; exits when close is called
	return t
}

// kick wakes the writer without blocking.
func (t *streamTransport) kick() *doorbell {
	select {
	case t.wake <- struct{}{}:
	default: // a kick is already pending
	}
	return nil
}

// maxDirectStreamWrite is the largest batch a caller writes itself on a stream connection. An idle connection's
// socket buffer is empty, so a write this small does not block; larger ones go to the writer goroutine, whose
// write has a deadline.
const maxDirectStreamWrite = 8 << 10

// writeDirect writes a small batch from the calling goroutine (the connection is idle: the writer goroutine has
// nothing to write), saving the hand-off to the writer goroutine on a sequential round trip.
func (t *streamTransport) writeDirect(b []byte) (int, bool) {
	if len(b) > maxDirectStreamWrite {
		return 0, false
	}
	n, err := t.nc.Write(b)
	if err != nil {
		// The rest goes to the writer, whose write fails too and resets the connection; the reader also sees
		// the broken connection.
		return n, true
	}
	return n, true
}

// close stops the writer and closes the TCP connection, which ends the reader; it does not block (over TLS, closing
// the raw connection rather than the tls.Conn skips the close_notify write, which could wait behind a blocked
// writer).
func (t *streamTransport) close() {
	t.once.Do(func() {
		close(t.done)
		_ = t.raw.Close()
	})
}

// readLoop reads, decodes and completes replies until the connection fails, then reports the failure.
func (t *streamTransport) readLoop(wg *sync.WaitGroup) {
	defer wg.Done()
	for t.readTurn(false) == nil {
	}
}

// readTurn reads once (blocking until bytes arrive), completes every whole reply, and ends the turn (endTurn). A
// non-nil error other than errInterrupted means the connection is gone: it has been closed and reported
// (pc.closed), and the caller must stop reading. Only the goroutine allowed to read calls it (the reader goroutine;
// on the latency lane, whoever holds the read role), so rbuf needs no lock. driving is set for a Get driving
// the lane: its read can be interrupted (errInterrupted: nothing was read, the connection is fine), and it does
// not yield to the callers it woke (see OnTraffic), since it reads for itself.
func (t *streamTransport) readTurn(driving bool) error {
	var n int
	var err error
	if driving {
		n, err = t.lane.read(t.rbuf)
		if err == errInterrupted {
			return err
		}
	} else {
		n, err = t.nc.Read(t.rbuf)
	}
	if n > 0 {
		if perr := t.pc.onInbound(t.rbuf[:n]); perr != nil {
			t.close() // reset has failed the pending commands already
			return perr
		}
		if !driving && t.pc.completedMany() {
			runtime.Gosched() // as in the event loop's OnTraffic: let the woken callers append first
		}
		t.pc.endTurn()
		if t.lane != nil {
			t.lane.turnEnded()
		}
	}
	if err != nil {
		t.close()
		if p := t.pc.partialLen(); p > 0 && errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w (%d bytes of a partial reply)", io.ErrUnexpectedEOF, p)
		}
		t.pc.closed("read", err)
		return err
	}
	return nil
}

// writeLoop writes each batch handed over by takeOut, one at a time, until close.
func (t *streamTransport) writeLoop(wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		select {
		case <-t.wake:
		case <-t.done:
			return
		}
		buf := t.pc.takeOut()
		if buf == nil {
			continue
		}
		// A peer that stops reading must not block the writer forever; the response timeout bounds it too.
		_ = t.nc.SetWriteDeadline(time.Now().Add(t.writeTimeout))
		_, err := t.nc.Write(buf)
		t.pc.recycle(buf)
		if err != nil {
			t.pc.reset("write", err)
			t.close()
			return
		}
	}
}

// endTurn ends a stream reader turn: if commands were appended while replies were processed, hand them to the writer;
// otherwise clear the flush mark set by deliver.
func (pc *pconn) endTurn() {
	pc.mu.Lock()
	kick := len(pc.out) > 0 && pc.state == stateOpen
	pc.flushPending = kick
	if kick {
		pc.tr.kick()
	}
	pc.mu.Unlock()
}

package conn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// tlsTransport carries one rediss:// connection. gnet has no TLS (GNET-NOTES pitfall 9), so a TLS connection
// gets a reader goroutine and a writer goroutine instead of an event loop; the pipeline above (pconn) is the same:
// callers append under the mutex, the reader completes replies in FIFO order and ends each turn by kicking the
// writer if anything was appended, the writer writes each accumulated batch in one TLS record stream write.
type tlsTransport struct {
	pc           *pconn
	raw          net.Conn // the TCP connection under tc; closing it stops both goroutines
	tc           *tls.Conn
	writeTimeout time.Duration

	wake chan struct{} // capacity 1: a kick not yet seen by the writer
	done chan struct{} // closed by close: the writer exits
	once sync.Once
}

var _ transport = (*tlsTransport)(nil)

// startTLS starts the reader and writer goroutines of a handshaken TLS connection. Both are owned by the Client and
// counted in wg.
func startTLS(tc *tls.Conn, raw net.Conn, pc *pconn, wg *sync.WaitGroup) *tlsTransport {
	t := &tlsTransport{
		pc:           pc,
		raw:          raw,
		tc:           tc,
		writeTimeout: pc.cfg.ResponseTimeout,
		wake:         make(chan struct{}, 1),
		done:         make(chan struct{}),
	}
	wg.Add(2)
	go t.readLoop(wg)  // owner: the Client; exits when the connection fails or is closed
	go t.writeLoop(wg) // owner: the Client; exits when close is called
	return t
}

// kick wakes the writer without blocking.
func (t *tlsTransport) kick() {
	select {
	case t.wake <- struct{}{}:
	default: // a kick is already pending
	}
}

// writeDirect is not possible over TLS (the tls.Conn write lock may be held by the writer): the pipeline kicks.
func (t *tlsTransport) writeDirect([]byte) (int, bool) { return 0, false }

// close stops the writer and closes the TCP connection, which ends the reader; it does not block (closing the raw
// connection rather than the tls.Conn skips the close_notify write, which could wait behind a blocked writer).
func (t *tlsTransport) close() {
	t.once.Do(func() {
		close(t.done)
		_ = t.raw.Close()
	})
}

// readLoop reads, decodes and completes replies until the connection fails, then reports the failure.
func (t *tlsTransport) readLoop(wg *sync.WaitGroup) {
	defer wg.Done()
	buf := make([]byte, 16<<10)
	w := 0
	for {
		n, err := t.tc.Read(buf[w:])
		if n > 0 {
			w += n
			consumed, perr := t.pc.onInbound(buf[:w])
			if perr != nil {
				t.close() // reset has failed the pending commands already
				return
			}
			w = copy(buf, buf[consumed:w])
			if w == len(buf) {
				// A reply larger than the buffer is still arriving.
				bigger := make([]byte, 2*len(buf))
				copy(bigger, buf[:w])
				buf = bigger
			}
			t.pc.endTurn()
		}
		if err != nil {
			t.close()
			if w > 0 && errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w (%d bytes of a partial reply)", io.ErrUnexpectedEOF, w)
			}
			t.pc.closed("read", err)
			return
		}
	}
}

// writeLoop writes each batch handed over by takeOut, one at a time, until close.
func (t *tlsTransport) writeLoop(wg *sync.WaitGroup) {
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
		_ = t.tc.SetWriteDeadline(time.Now().Add(t.writeTimeout))
		_, err := t.tc.Write(buf)
		t.pc.recycle(buf)
		if err != nil {
			t.pc.reset("write", err)
			t.close()
			return
		}
	}
}

// endTurn ends a TLS reader turn: if commands were appended while replies were processed, hand them to the writer;
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

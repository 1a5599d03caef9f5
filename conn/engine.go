package conn

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"
)

// engine is the Client's gnet client: its event loops read every plain-TCP connection of the Client and write the
// batches the pipeline hands them. It is the only place gnet appears.
type engine struct {
	cli   *gnet.Client
	bells []*doorbell // one per event loop, none on the portable path (doorbell_portable.go); immutable after newEngine
}

// newEngine creates and starts a gnet client with n event loops.
func newEngine(n int, log *slog.Logger) (*engine, error) {
	e := &engine{}
	cli, err := gnet.NewClient(&loopHandler{eng: e},
		gnet.WithNumEventLoop(n),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		// gnet's default logger prints to stdout; route it to ours.
		gnet.WithLogger(gnetLogger{log}),
	)
	if err != nil {
		return nil, fmt.Errorf("conn: creating the gnet client: %w", err)
	}
	if err := cli.Start(); err != nil {
		return nil, fmt.Errorf("conn: starting the gnet event loops: %w", err)
	}
	e.cli = cli
	if err := e.startDoorbells(n); err != nil {
		_ = e.stop()
		return nil, err
	}
	return e, nil
}

// bellFor returns the doorbell on loop el, or nil (the connection then falls back to gnet's Wake).
func (e *engine) bellFor(el gnet.EventLoop) *doorbell {
	for _, d := range e.bells {
		if d.loop == el {
			return d
		}
	}
	return nil
}

// enroll hands a connected, handshaken TCP connection to an event loop and returns its transport. gnet duplicates
// the socket and closes nc. The transport travels in EnrollContext's context so that it is in place before the
// first event (setting it afterwards would race with the first OnTraffic). It blocks until the loop has
// registered the connection, so it must not be called from an event loop.
func (e *engine) enroll(nc net.Conn, pc *pconn) (*gnetTransport, error) {
	t := &gnetTransport{pc: pc}
	if _, err := e.cli.EnrollContext(nc, t); err != nil {
		return nil, err
	}
	return t, nil
}

// stop stops the event loops and waits for them. Connections still open are closed (OnClose runs for each). The
// doorbells close last, once no caller is between deciding to sound one and sounding it.
func (e *engine) stop() error {
	err := e.cli.Stop()
	for _, d := range e.bells {
		d.close()
	}
	return err
}

// gnetTransport is one connection on an event loop.
type gnetTransport struct {
	pc   *pconn
	c    gnet.Conn // set by OnOpen on the loop, before EnrollContext returns; immutable after
	fd   int       // the socket, for writeDirect (on Unix); valid until OnClose returns
	bell *doorbell // the doorbell of the connection's loop (set by OnOpen); nil: use gnet's Wake

	nextFlush *gnetTransport // link in bell's stack; written by the ringer, then by the loop
	queued    atomic.Bool    // on bell's stack: set by the ringer that pushes, cleared by the loop that pops
}

var _ transport = (*gnetTransport)(nil)

// kick rings the loop's doorbell, whose answer flushes this connection. Without a doorbell it uses gnet's Wake,
// which runs OnTraffic (and so flushes) but allocates a closure per call.
func (t *gnetTransport) kick() *doorbell {
	if t.bell != nil {
		return t.bell.ring(t)
	}
	// An error means the engine is shutting down; the connection is closed with it.
	_ = t.c.Wake(nil)
	return nil
}

// flush writes what the pipeline hands over, on the loop. gnet writes at once and copies what the socket did not
// take into its own buffer (written on EPOLLOUT); on a write error it closes the connection (OnClose runs inside
// Write). takeOut returns nil once the connection is closed, so a stale doorbell entry writes nothing.
func (t *gnetTransport) flush() {
	if buf := t.pc.takeOut(); buf != nil {
		_, _ = t.c.Write(buf)
		t.pc.recycle(buf)
	}
}

// close asks the loop to close the connection; OnClose follows.
func (t *gnetTransport) close() {
	_ = t.c.Close()
}

// loopHandler receives the events of every connection of an engine (and of its doorbells). Its methods run on an
// event loop and never block.
type loopHandler struct {
	gnet.BuiltinEventEngine
	eng *engine
}

// OnOpen records the gnet connection in its transport, and the loop of a doorbell.
func (h *loopHandler) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	switch x := c.Context().(type) {
	case *gnetTransport:
		x.c, x.fd, x.bell = c, c.Fd(), h.eng.bellFor(c.EventLoop())
	case *doorbell:
		x.loop = c.EventLoop()
	}
	return nil, gnet.None
}

// OnTraffic runs when bytes arrived and when the pipeline kicked the loop (Wake): decode and complete every whole
// reply, then write everything appended meanwhile in one write — the one flush of this loop turn.
func (*loopHandler) OnTraffic(c gnet.Conn) gnet.Action {
	t, ok := c.Context().(*gnetTransport)
	if !ok {
		c.Context().(*doorbell).answer(c)
		return gnet.None
	}
	pc := t.pc
	if c.InboundBuffered() > 0 {
		// onInbound consumes everything (a partial reply goes to its own bounded buffer), so gnet's inbound
		// buffer stays empty and Peek returns the loop's read buffer without copying.
		data, _ := c.Peek(-1)
		err := pc.onInbound(data)
		_, _ = c.Discard(len(data)) // len(data) > 0: gnet's Discard(n <= 0) discards the whole buffer
		if err != nil {
			return gnet.Close
		}
		if pc.completedMany() {
			// The callers these replies woke are in this P's run queue; yielding lets them run now, append
			// their next commands (the flush is marked pending, so they do not ring) and park, before the
			// flush below: one write per turn instead of a write now and a doorbell flush moments later
			// (measured at G=64: 13-14 commands per write instead of 8).
			runtime.Gosched()
		}
	}
	t.flush()
	return gnet.None
}

// OnClose fails the connection's pending commands and lets its keeper reconnect.
func (*loopHandler) OnClose(c gnet.Conn, err error) gnet.Action {
	t, ok := c.Context().(*gnetTransport)
	if !ok {
		return gnet.None // a doorbell, closed with its loop
	}
	op := "read"
	var se *os.SyscallError
	if errors.As(err, &se) {
		op = se.Syscall
	}
	switch {
	case err == nil:
		err = io.EOF
		op = "close"
	case errors.Is(err, io.EOF) && t.pc.partialLen() > 0:
		// The peer closed in the middle of a reply.
		err = fmt.Errorf("%w (%d bytes of a partial reply)", io.ErrUnexpectedEOF, t.pc.partialLen())
	}
	t.pc.closed(op, err)
	return gnet.None
}

// gnetLogger adapts slog to gnet's logger. gnet's Info messages (engine start) are logged at Debug level.
type gnetLogger struct{ l *slog.Logger }

func (g gnetLogger) Debugf(format string, args ...any) {
	g.l.Debug("gnet: " + fmt.Sprintf(format, args...))
}
func (g gnetLogger) Infof(format string, args ...any) {
	g.l.Debug("gnet: " + fmt.Sprintf(format, args...))
}
func (g gnetLogger) Warnf(format string, args ...any) {
	g.l.Warn("gnet: " + fmt.Sprintf(format, args...))
}
func (g gnetLogger) Errorf(format string, args ...any) {
	g.l.Error("gnet: " + fmt.Sprintf(format, args...))
}
func (g gnetLogger) Fatalf(format string, args ...any) {
	g.l.Error("gnet: " + fmt.Sprintf(format, args...))
}

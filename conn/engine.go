package conn

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"

	"github.com/panjf2000/gnet/v2"
)

// engine is the Client's gnet client: its event loops read every plain-TCP connection of the Client and write the
// batches the pipeline hands them. It is the only place gnet appears.
type engine struct {
	cli *gnet.Client
}

// newEngine creates and starts a gnet client with n event loops.
func newEngine(n int, log *slog.Logger) (*engine, error) {
	cli, err := gnet.NewClient(&loopHandler{},
		gnet.WithNumEventLoop(n),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		// gnet's default logger prints to stdout (GNET-NOTES pitfall 4); route it to ours.
		gnet.WithLogger(gnetLogger{log}),
	)
	if err != nil {
		return nil, fmt.Errorf("conn: creating the gnet client: %w", err)
	}
	if err := cli.Start(); err != nil {
		return nil, fmt.Errorf("conn: starting the gnet event loops: %w", err)
	}
	return &engine{cli: cli}, nil
}

// enroll hands a connected, handshaken TCP connection to an event loop and returns its transport. gnet duplicates
// the socket and closes nc. The transport travels in EnrollContext's context so that it is in place before the
// first event (setting it afterwards would race with OnTraffic: GNET-NOTES pitfall 1). It blocks until the loop has
// registered the connection, so it must not be called from an event loop.
func (e *engine) enroll(nc net.Conn, pc *pconn) (*gnetTransport, error) {
	t := &gnetTransport{pc: pc}
	if _, err := e.cli.EnrollContext(nc, t); err != nil {
		return nil, err
	}
	return t, nil
}

// stop stops the event loops and waits for them. Connections still open are closed (OnClose runs for each).
func (e *engine) stop() error {
	return e.cli.Stop()
}

// gnetTransport is one connection on an event loop.
type gnetTransport struct {
	pc *pconn
	c  gnet.Conn // set by OnOpen on the loop, before EnrollContext returns; immutable after
	fd int       // the socket, for writeDirect; valid until OnClose returns
}

var _ transport = (*gnetTransport)(nil)

// kick wakes the connection's loop, which runs OnTraffic and so flushes. gnet allocates a closure per Wake
// (GNET-NOTES pitfall 7), which is why the pipeline kicks only when no flush is pending.
func (t *gnetTransport) kick() {
	// An error means the engine is shutting down; the connection is closed with it.
	_ = t.c.Wake(nil)
}

// writeDirect writes on the socket from the calling goroutine (a non-blocking fd). pconn calls it with its mutex
// held and only while the connection is open; OnClose marks the connection closed under that mutex before gnet
// closes the descriptor, so the descriptor is valid here. Any error (EAGAIN, a broken pipe) reports 0 bytes
// written: the loop then writes the bytes itself and, if the socket is broken, closes the connection.
func (t *gnetTransport) writeDirect(b []byte) (int, bool) {
	n, err := syscall.Write(t.fd, b)
	if err != nil || n < 0 {
		return 0, true
	}
	return n, true
}

// close asks the loop to close the connection; OnClose follows.
func (t *gnetTransport) close() {
	_ = t.c.Close()
}

// loopHandler receives the events of every connection of an engine. Its methods run on an event loop and never
// block.
type loopHandler struct {
	gnet.BuiltinEventEngine
}

// OnOpen records the gnet connection in its transport.
func (*loopHandler) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	t := c.Context().(*gnetTransport)
	t.c, t.fd = c, c.Fd()
	return nil, gnet.None
}

// OnTraffic runs when bytes arrived and when the pipeline kicked the loop (Wake): decode and complete every whole
// reply, then write everything appended meanwhile in one write — the one flush of this loop turn.
func (*loopHandler) OnTraffic(c gnet.Conn) gnet.Action {
	t := c.Context().(*gnetTransport)
	pc := t.pc
	if c.InboundBuffered() > 0 {
		data, _ := c.Peek(-1)
		n, err := pc.onInbound(data)
		if n > 0 {
			// Never Discard(0): gnet then discards everything (GNET-NOTES pitfall 2).
			_, _ = c.Discard(n)
		}
		if err != nil {
			return gnet.Close
		}
	}
	if buf := pc.takeOut(); buf != nil {
		// gnet writes at once and copies what the socket did not take into its own buffer; on a write error it
		// closes the connection (OnClose runs inside Write).
		_, _ = c.Write(buf)
		pc.recycle(buf)
	}
	return gnet.None
}

// OnClose fails the connection's pending commands and lets its slot reconnect.
func (*loopHandler) OnClose(c gnet.Conn, err error) gnet.Action {
	t := c.Context().(*gnetTransport)
	op := "read"
	var se *os.SyscallError
	if errors.As(err, &se) {
		op = se.Syscall
	}
	switch {
	case err == nil:
		err = io.EOF
		op = "close"
	case errors.Is(err, io.EOF) && c.InboundBuffered() > 0:
		// The peer closed in the middle of a reply.
		err = fmt.Errorf("%w (%d bytes of a partial reply)", io.ErrUnexpectedEOF, c.InboundBuffered())
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

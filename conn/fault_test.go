package conn_test

import (
	"errors"
	"io"
	"net"
	"testing"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/resp"
)

// faultClient connects a one-connection Client to a fake server whose first connection answers the first
// non-PING command with bad, and whose later connections answer every command with the bulk string "ok".
func faultClient(t *testing.T, bad string, limits resp.Limits) (*conn.Client, *fakeServer) {
	t.Helper()
	f := startFake(t, func(i int, cmd []string, c net.Conn) bool {
		if i == 0 {
			if !reply(c, bad) {
				return false
			}
			return bad[len(bad)-1] == '\n' // a partial frame: stop and close
		}
		return reply(c, "$2\r\nok\r\n")
	})
	return newClient(t, conn.Config{Addr: f.addr(), PoolSize: 1, Limits: limits}), f
}

// assertProtocolFault checks that a command failed with a connection error caused by a *resp.ProtocolError, and
// that the pool then reconnected and serves the next command.
func assertProtocolFault(t *testing.T, c *conn.Client, f *fakeServer, err error) {
	t.Helper()
	var pe *resp.ProtocolError
	if !errors.As(err, &pe) || !errors.Is(err, conn.ErrConnLost) {
		t.Fatalf("err = %v; want a *ConnError (ErrConnLost) wrapping a *resp.ProtocolError", err)
	}
	assertServesNext(t, c, f)
}

// assertServesNext checks that the client serves a command on a second connection (the faulty one was dropped).
func assertServesNext(t *testing.T, c *conn.Client, f *fakeServer) {
	t.Helper()
	ctx := ctxT(t)
	v, err := c.Do(ctx, "GET", "after").Get(ctx)
	if err != nil || v.Str != "ok" {
		t.Fatalf("next command after the fault = %v, %v; want \"ok\" from a new connection", v, err)
	}
	if n := f.accepted.Load(); n != 2 {
		t.Fatalf("the fake server accepted %d connections; want 2 (the faulty one, then its replacement)", n)
	}
}

func TestFaultUnknownTypeByte(t *testing.T) {
	c, f := faultClient(t, "?what\r\n", resp.Limits{})
	ctx := ctxT(t)
	_, err := c.Do(ctx, "GET", "x").Get(ctx)
	assertProtocolFault(t, c, f, err)
}

func TestFaultNegativeBulkLength(t *testing.T) {
	c, f := faultClient(t, "$-5\r\n", resp.Limits{})
	ctx := ctxT(t)
	_, err := c.Do(ctx, "GET", "x").Get(ctx)
	assertProtocolFault(t, c, f, err)
}

func TestFaultBulkOverTheLimit(t *testing.T) {
	c, f := faultClient(t, "$100\r\n", resp.Limits{MaxBulkLen: 16})
	ctx := ctxT(t)
	_, err := c.Do(ctx, "GET", "x").Get(ctx)
	assertProtocolFault(t, c, f, err)
}

// Garbage after two good replies in one pipelined write: the two commands complete normally, the rest fail.
func TestFaultGarbageMidPipeline(t *testing.T) {
	c, f := faultClient(t, "$1\r\na\r\n:2\r\n#garbage\r\n", resp.Limits{})
	ctx := ctxT(t)
	fs := c.Pipeline(ctx,
		conn.Cmd{Args: []string{"GET", "a"}},
		conn.Cmd{Args: []string{"GET", "b"}},
		conn.Cmd{Args: []string{"GET", "c"}},
		conn.Cmd{Args: []string{"GET", "d"}})
	if v, err := fs[0].Get(ctx); err != nil || v.Str != "a" {
		t.Fatalf("reply 0 = %v, %v; want \"a\"", v, err)
	}
	if v, err := fs[1].Get(ctx); err != nil || v.Int != 2 {
		t.Fatalf("reply 1 = %v, %v; want 2", v, err)
	}
	for _, f := range fs[2:] {
		_, err := f.Get(ctx)
		var pe *resp.ProtocolError
		if !errors.As(err, &pe) {
			t.Fatalf("command after the garbage: err = %v; want a protocol error", err)
		}
	}
	assertServesNext(t, c, f)
}

// The peer closes in the middle of a reply: the command fails with a connection error wrapping
// io.ErrUnexpectedEOF.
func TestFaultCloseMidFrame(t *testing.T) {
	c, f := faultClient(t, "$10\r\nabc", resp.Limits{})
	ctx := ctxT(t)
	_, err := c.Do(ctx, "GET", "x").Get(ctx)
	if !errors.Is(err, conn.ErrConnLost) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v; want ErrConnLost wrapping io.ErrUnexpectedEOF", err)
	}
	assertServesNext(t, c, f)
}

// A reply nobody asked for (the stream is out of step) resets the connection too.
func TestFaultUnexpectedReply(t *testing.T) {
	c, f := faultClient(t, "$1\r\na\r\n$1\r\nb\r\n", resp.Limits{})
	ctx := ctxT(t)
	_, _ = c.Do(ctx, "GET", "x").Get(ctx) // "a" may complete it before "b" is found unexpected
	assertServesNext(t, c, f)
}

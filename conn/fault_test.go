package conn_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/resp"
)

// transports are the two ways a plain-TCP connection is read: an event loop (the pool), and Go's netpoller (the
// latency lane, which takes a command issued while the client is idle). Every fault is injected on each.
var transports = []struct {
	name    string
	noLane  bool
	initial int32 // connections the client opens at start
}{
	{"event-loop", true, 1},
	{"latency-lane", false, 2},
}

// faultClient connects a client with one pooled connection (plus the lane, or not) to a fake server that answers
// the first non-PING command it receives, on whichever connection, with bad, and every later command with the bulk
// string "ok". With the lane, the first command goes to the lane (the client is idle); without, to the pool.
func faultClient(t *testing.T, noLane bool, bad string, limits resp.Limits) (*conn.Client, *fakeServer) {
	t.Helper()
	var faulted atomic.Bool
	f := startFake(t, func(i int, cmd []string, c net.Conn) bool {
		if faulted.CompareAndSwap(false, true) {
			if !reply(c, bad) {
				return false
			}
			return bad[len(bad)-1] == '\n' // a partial frame: stop and close
		}
		return reply(c, "$2\r\nok\r\n")
	})
	return newClient(t, conn.Config{Addr: f.addr(), PoolSize: 1, Limits: limits, DisableLatencyLane: noLane}), f
}

// forEachTransport runs a fault case on both transports.
func forEachTransport(t *testing.T, bad string, limits resp.Limits, run func(t *testing.T, c *conn.Client, check func())) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c, f := faultClient(t, tr.noLane, bad, limits)
			run(t, c, func() { assertServesNext(t, c, f, tr.initial+1) })
		})
	}
}

// assertProtocolFault checks that a command failed with a connection error caused by a *resp.ProtocolError.
func assertProtocolFault(t *testing.T, err error) {
	t.Helper()
	var pe *resp.ProtocolError
	if !errors.As(err, &pe) || !errors.Is(err, conn.ErrConnLost) {
		t.Fatalf("err = %v; want a *ConnError (ErrConnLost) wrapping a *resp.ProtocolError", err)
	}
}

// assertServesNext checks that the client serves the next command, and that exactly one connection was replaced
// (the fake server accepted want connections in all).
func assertServesNext(t *testing.T, c *conn.Client, f *fakeServer, want int32) {
	t.Helper()
	ctx := ctxT(t)
	v, err := c.Do(ctx, "GET", "after").Get(ctx)
	if err != nil || v.Str != "ok" {
		t.Fatalf("next command after the fault = %v, %v; want \"ok\"", v, err)
	}
	eventually(t, func() error { // the replacement is dialled in the background
		if n := f.accepted.Load(); n != want {
			return fmt.Errorf("the fake server accepted %d connections; want %d (the faulty one replaced once)", n, want)
		}
		return nil
	})
}

func TestFaultUnknownTypeByte(t *testing.T) {
	forEachTransport(t, "?what\r\n", resp.Limits{}, func(t *testing.T, c *conn.Client, check func()) {
		ctx := ctxT(t)
		_, err := c.Do(ctx, "GET", "x").Get(ctx)
		assertProtocolFault(t, err)
		check()
	})
}

func TestFaultNegativeBulkLength(t *testing.T) {
	forEachTransport(t, "$-5\r\n", resp.Limits{}, func(t *testing.T, c *conn.Client, check func()) {
		ctx := ctxT(t)
		_, err := c.Do(ctx, "GET", "x").Get(ctx)
		assertProtocolFault(t, err)
		check()
	})
}

func TestFaultBulkOverTheLimit(t *testing.T) {
	forEachTransport(t, "$100\r\n", resp.Limits{MaxBulkLen: 16}, func(t *testing.T, c *conn.Client, check func()) {
		ctx := ctxT(t)
		_, err := c.Do(ctx, "GET", "x").Get(ctx)
		assertProtocolFault(t, err)
		check()
	})
}

// Garbage after two good replies in one pipelined write: the two commands complete normally, the rest fail.
func TestFaultGarbageMidPipeline(t *testing.T) {
	forEachTransport(t, "$1\r\na\r\n:2\r\n#garbage\r\n", resp.Limits{}, func(t *testing.T, c *conn.Client, check func()) {
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
			assertProtocolFault(t, err)
		}
		check()
	})
}

// The peer closes in the middle of a reply: the command fails with a connection error wrapping
// io.ErrUnexpectedEOF.
func TestFaultCloseMidFrame(t *testing.T) {
	forEachTransport(t, "$10\r\nabc", resp.Limits{}, func(t *testing.T, c *conn.Client, check func()) {
		ctx := ctxT(t)
		_, err := c.Do(ctx, "GET", "x").Get(ctx)
		if !errors.Is(err, conn.ErrConnLost) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("err = %v; want ErrConnLost wrapping io.ErrUnexpectedEOF", err)
		}
		check()
	})
}

// Two replies to one command: the extra one (the stream is out of step) resets the connection.
func TestFaultUnexpectedReply(t *testing.T) {
	forEachTransport(t, "$1\r\na\r\n$1\r\nb\r\n", resp.Limits{}, func(t *testing.T, c *conn.Client, check func()) {
		ctx := ctxT(t)
		// "a" completes the command if it is decoded before "b" is found to be extra.
		if v, err := c.Do(ctx, "GET", "x").Get(ctx); err == nil && v.Str != "a" {
			t.Fatalf("GET = %v; want \"a\" or a connection error", v)
		}
		check()
	})
}

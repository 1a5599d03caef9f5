package conn_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
	"go.uber.org/goleak"
)

// While the server sleeps (DEBUG SLEEP) with commands queued behind the sleep, the server process is killed: every
// pending future fails with ErrConnLost because of the drop (the response timeout is a minute, so it cannot be
// what ends them). After a restart the client reconnects by itself.
func TestPendingFailAtOnceOnDropThenReconnectAfterRestart(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr(), PoolSize: 1, ResponseTimeout: time.Minute})
	ctx := ctxT(t)
	sleep := c.Do(ctx, "DEBUG", "SLEEP", "30")
	var fs []*future.Future[resp.Value]
	for range 50 {
		fs = append(fs, c.Eval(ctx, incrScript, []string{"n"}, "1"))
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	for i, f := range append(fs, sleep) {
		_, err := f.Get(ctx)
		var ce *conn.ConnError
		if !errors.Is(err, conn.ErrConnLost) || !errors.As(err, &ce) || ce.Timeout() {
			t.Fatalf("future %d: err = %v; want ErrConnLost from the drop", i, err)
		}
	}

	// While the server is down, commands fail fast: the slot is between attempts, or an attempt fails.
	eventually(t, func() error {
		_, err := c.Do(ctx, "PING").Get(ctx)
		if errors.Is(err, conn.ErrUnavailable) {
			return nil
		}
		return errors.New("PING while the server is down did not fail with ErrUnavailable")
	})

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		_, err := c.Do(ctx, "PING").Get(ctx)
		if err != nil && !errors.Is(err, conn.ErrUnavailable) {
			t.Fatalf("PING after the restart: %v; want success or ErrUnavailable while reconnecting", err)
		}
		return err
	})
}

func TestReconnectAfterClientKill(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr(), PoolSize: 2, ClientName: "victim"})
	ctx := ctxT(t)
	if _, err := c.Do(ctx, "SET", "k", "1").Get(ctx); err != nil {
		t.Fatal(err)
	}
	before := clientIDs(t, srv, "victim")
	if n, err := srv.DoInt(ctx, "CLIENT", "KILL", "TYPE", "normal"); err != nil || n < 3 {
		t.Fatalf("CLIENT KILL = %d, %v", n, err)
	}
	eventually(t, func() error {
		_, err := c.Do(ctx, "GET", "k").Get(ctx)
		if err != nil && !errors.Is(err, conn.ErrConnLost) && !errors.Is(err, conn.ErrUnavailable) {
			t.Fatalf("GET after CLIENT KILL: %v", err)
		}
		return err
	})
	eventually(t, func() error {
		after := clientIDs(t, srv, "victim")
		if len(after) != 3 {
			return errors.New("pool not back to 3 connections (2 + the latency lane): " + strings.Join(after, ","))
		}
		for _, id := range after {
			for _, old := range before {
				if id == old {
					return errors.New("old connection still listed")
				}
			}
		}
		return nil
	})
}

// clientIDs returns the ids of the server's connections named name.
func clientIDs(t *testing.T, srv *redistest.Server, name string) []string {
	t.Helper()
	list, err := srv.DoString(context.Background(), "CLIENT", "LIST")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for line := range strings.SplitSeq(strings.TrimSpace(list), "\n") {
		if strings.Contains(line, " name="+name+" ") {
			id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
			ids = append(ids, id)
		}
	}
	return ids
}

// A cancelled context completes its future at once with ctx.Err(); the late reply is read and discarded in order,
// so the next command gets its own reply.
func TestContextCancelMidPipelineKeepsTheStreamInStep(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr(), PoolSize: 1})
	ctx := ctxT(t)
	if _, err := c.Do(ctx, "MSET", "a", "A", "b", "B").Get(ctx); err != nil {
		t.Fatal(err)
	}
	sleep := c.Do(ctx, "DEBUG", "SLEEP", "1.5") // holds the replies back, long enough for a loaded machine
	cctx, cancel := context.WithCancel(ctx)
	var cancelled []*future.Future[resp.Value]
	for range 20 {
		cancelled = append(cancelled, c.Do(cctx, "GET", "a"))
	}
	after := c.Do(ctx, "GET", "b")
	cancel()
	for i, f := range cancelled {
		if _, err := f.Get(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled future %d: err = %v; want context.Canceled", i, err)
		}
		if sleep.IsDone() {
			t.Fatalf("cancelled future %d completed only after the server woke up", i)
		}
	}
	if _, err := sleep.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := after.Get(ctx); err != nil || v.Str != "B" {
		t.Fatalf("GET b after the cancelled GETs = %v, %v; want \"B\" (stream out of step?)", v, err)
	}
	if v, err := c.Do(ctx, "GET", "a").Get(ctx); err != nil || v.Str != "A" {
		t.Fatalf("GET a = %v, %v", v, err)
	}
	// A context already done never sends anything.
	if _, err := c.Do(cctx, "INCR", "never").Get(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with a done context: %v", err)
	}
	if n, err := srv.DoInt(ctx, "EXISTS", "never"); err != nil || n != 0 {
		t.Fatalf("EXISTS never = %d, %v; want 0", n, err)
	}
}

// A reply that does not come within ResponseTimeout fails the command with a timeout error and resets the
// connection; the client then serves the next command.
func TestResponseTimeoutResetsTheConnection(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr(), PoolSize: 1, ResponseTimeout: 200 * time.Millisecond})
	ctx := ctxT(t)
	slow := c.Do(ctx, "DEBUG", "SLEEP", "1")
	behind := c.Do(ctx, "PING")
	for _, f := range []*future.Future[resp.Value]{slow, behind} {
		_, err := f.Get(ctx)
		var ce *conn.ConnError
		if !errors.Is(err, conn.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ce) || !ce.Timeout() {
			t.Fatalf("err = %v; want a timeout ConnError (ErrTimeout, context.DeadlineExceeded)", err)
		}
	}
	// The server sleeps for a second: a command sent before it wakes may time out as well (on a connection that
	// is ready at once, such as the idle client's latency lane). Once it answers again, the client serves.
	if _, err := srv.Do(ctx, "PING"); err != nil {
		t.Fatalf("the server after DEBUG SLEEP: %v", err)
	}
	if v, err := c.Do(ctx, "PING").Get(ctx); err != nil || v.Str != "PONG" {
		t.Fatalf("PING after the reset = %v, %v", v, err)
	}
}

// An idle connection PINGs its peer; a peer that stops answering (here: a fake server that goes silent after the
// handshake) is detected by the response timeout on that PING, without any command, and replaced.
func TestPingDetectsADeadPeer(t *testing.T) {
	f := startFake(t, func(i int, cmd []string, c net.Conn) bool {
		return reply(c, "$2\r\nok\r\n")
	})
	f.silentAfterHandshake = 0
	c := newClient(t, conn.Config{Addr: f.addr(), PoolSize: 1, DisableLatencyLane: true,
		PingInterval: 40 * time.Millisecond, ResponseTimeout: 100 * time.Millisecond})
	eventually(t, func() error {
		if f.accepted.Load() < 2 {
			return errors.New("the silent connection was not replaced")
		}
		return nil
	})
	ctx := ctxT(t)
	if v, err := c.Do(ctx, "GET", "x").Get(ctx); err != nil || v.Str != "ok" {
		t.Fatalf("GET = %v, %v", v, err)
	}
}

func TestCloseFailsPendingAndLaterCallsWithErrClosed(t *testing.T) {
	srv := redistest.Start(t)
	c, err := conn.New(conn.Config{Addr: srv.Addr(), PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	var fs []*future.Future[resp.Value]
	fs = append(fs, c.Do(ctx, "DEBUG", "SLEEP", "2")) // Close comes before the replies, even on a loaded machine
	for range 10 {
		fs = append(fs, c.Do(ctx, "PING"))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for i, f := range fs {
		if !f.IsDone() {
			t.Fatalf("future %d still pending after Close returned", i)
		}
		if _, err := f.Get(ctx); !errors.Is(err, conn.ErrClosed) {
			t.Fatalf("future %d: err = %v; want ErrClosed", i, err)
		}
	}
	if _, err := c.Do(ctx, "PING").Get(ctx); !errors.Is(err, conn.ErrClosed) {
		t.Fatalf("Do after Close: %v", err)
	}
	if _, err := c.Subscribe("x", func(conn.Message) {}).Get(ctx); !errors.Is(err, conn.ErrClosed) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
	if fs := c.Pipeline(ctx, conn.Cmd{Args: []string{"PING"}}); !errors.Is(errOf(fs[0]), conn.ErrClosed) {
		t.Fatalf("Pipeline after Close: %v", errOf(fs[0]))
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func errOf(f *future.Future[resp.Value]) error {
	_, err := f.Get(context.Background())
	return err
}

// Close stops every goroutine the Client started: event loops, dial goroutines, TLS readers and writers, the
// timer's worker. goleak compares with the goroutines that existed before New (it retries for a moment, because a
// goroutine that has signalled its exit may still be returning).
func TestGoroutinesReturnToBaselineAfterClose(t *testing.T) {
	srv := redistest.Start(t)
	tlsSrv := redistest.Start(t, redistest.WithTLS())
	ctx := ctxT(t)
	baseline := goleak.IgnoreCurrent()
	for _, cfg := range []conn.Config{
		{Addr: srv.Addr(), PoolSize: 3, EventLoops: 2},
		{Addr: tlsSrv.Addr(), PoolSize: 2, TLS: tlsSrv.TLSConfig()},
	} {
		c, err := conn.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Do(ctx, "PING").Get(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Subscribe("g", func(conn.Message) {}).Get(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		goleak.VerifyNone(t, baseline)
	}
}

func TestEmptyCommandsAreRejected(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr()})
	ctx := ctxT(t)
	if _, err := c.Do(ctx).Get(ctx); !errors.Is(err, conn.ErrEmptyCommand) {
		t.Fatalf("Do(): %v", err)
	}
	if _, err := c.Eval(ctx, nil, nil).Get(ctx); !errors.Is(err, conn.ErrEmptyCommand) {
		t.Fatalf("Eval(nil): %v", err)
	}
	fs := c.Pipeline(ctx, conn.Cmd{Args: []string{"PING"}}, conn.Cmd{})
	for _, f := range fs {
		if !errors.Is(errOf(f), conn.ErrEmptyCommand) {
			t.Fatalf("Pipeline with an empty command: %v", errOf(f))
		}
	}
	if v, err := c.Do(ctx, "PING").Get(ctx); err != nil || v.Str != "PONG" {
		t.Fatalf("PING = %v, %v (stream out of step?)", v, err)
	}
}

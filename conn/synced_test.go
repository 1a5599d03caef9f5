package conn_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// countingHandler counts log records whose message contains a substring.
type countingHandler struct {
	slog.Handler
	substr string
	n      *atomic.Int32
}

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.substr) {
		h.n.Add(1)
	}
	return nil
}

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func TestSendAndWaitWithoutReplicasAndBadInput(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr()})
	ctx := ctxT(t)

	start := time.Now()
	r, err := c.SendAndWait(ctx, conn.Cmd{Args: []string{"SET", "k", "v"}}, 1, 50*time.Millisecond).Get(ctx)
	if err != nil || r.Reply.Str != "OK" || r.WaitErr != nil || r.Replicas != 0 {
		t.Fatalf("SendAndWait with no replica = %+v, %v; want OK and 0 replicas", r, err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("WAIT returned after %v, before its 50 ms timeout: it was not sent", d)
	}

	// The command's own error is the future's error.
	_, err = c.SendAndWait(ctx, conn.Cmd{Args: []string{"INCR", "k"}}, 1, 10*time.Millisecond).Get(ctx)
	if !strings.Contains(err.Error(), "not an integer") {
		t.Fatalf("SendAndWait of a failing command: err = %v", err)
	}

	for _, bad := range []struct {
		cmd      conn.Cmd
		replicas int
		timeout  time.Duration
		want     error
	}{
		{conn.Cmd{}, 1, time.Millisecond, conn.ErrEmptyCommand},
		{conn.Cmd{Args: []string{"PING"}}, 0, time.Millisecond, conn.ErrBadWait},
		{conn.Cmd{Args: []string{"PING"}}, 1, 0, conn.ErrBadWait},
		{conn.Cmd{Args: []string{"PING"}}, 1, conn.DefaultResponseTimeout, conn.ErrBadWait},
	} {
		if _, err := c.SendAndWait(ctx, bad.cmd, bad.replicas, bad.timeout).Get(ctx); !errors.Is(err, bad.want) {
			t.Errorf("SendAndWait(%v, %d, %v): err = %v, want %v", bad.cmd, bad.replicas, bad.timeout, err, bad.want)
		}
	}

	// The context bounds the pair.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.SendAndWait(short, conn.Cmd{Args: []string{"SET", "k", "w"}}, 1, time.Second).Get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SendAndWait past its context: err = %v", err)
	}
}

// TestSendAndWaitDetectsServersWithoutWait runs against a server where WAIT does not exist (renamed away, as some
// proxies and managed services do): the first call reports ErrWaitUnsupported after one log line, later calls do
// not send WAIT at all; the commands themselves run.
func TestSendAndWaitDetectsServersWithoutWait(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig("rename-command", `WAIT ""`))
	var logged atomic.Int32
	c := newClient(t, conn.Config{Addr: srv.Addr(),
		Logger: slog.New(countingHandler{Handler: slog.DiscardHandler, substr: "does not support WAIT", n: &logged})})
	ctx := ctxT(t)
	// Load the script first: after a NOSCRIPT the command is sent again with a WAIT of its own, and the WAIT sent
	// after the refused attempt would be a second unknown command.
	if _, err := c.Eval(ctx, benchAcquire, []string{"warm"}, "30000", "o").Get(ctx); err != nil {
		t.Fatal(err)
	}
	errsBefore := errorCount(t, ctx, srv, "ERR")

	for i := range 3 {
		r, err := c.SendAndWait(ctx, conn.Cmd{Script: benchAcquire, Keys: []string{"nw"}, Args: []string{"30000", "o"}}, 1, time.Second).Get(ctx)
		if err != nil || !errors.Is(r.WaitErr, conn.ErrWaitUnsupported) {
			t.Fatalf("call %d: %+v, %v; want WaitErr ErrWaitUnsupported", i, r, err)
		}
		if i == 0 && !r.Reply.Null {
			t.Fatalf("the acquire did not run: %+v", r)
		}
	}
	if n := logged.Load(); n != 1 {
		t.Fatalf("logged %d times, want once", n)
	}
	if n := errorCount(t, ctx, srv, "ERR") - errsBefore; n != 1 {
		t.Fatalf("the server refused %d unknown commands, want 1: WAIT was sent again after the detection", n)
	}
	if n, err := srv.DoInt(ctx, "HGET", "nw", "o"); err != nil || n != 3 {
		t.Fatalf("hold count %d, %v; want 3 (every acquire ran)", n, err)
	}
}

// TestSendAndWaitFollowsMovedAsAPair sends a write and its WAIT to a master that no longer owns the slot: the
// MOVED write is sent again with its own WAIT on the new owner, and the count is the new owner's replica's.
func TestSendAndWaitFollowsMovedAsAPair(t *testing.T) {
	cl := redistest.StartCluster(t)
	c := newClient(t, conn.Config{ClusterAddrs: cl.Addrs()})
	slot := conn.KeySlot("{sw}")
	ctx, src, dst := migrationSetup(t, cl, slot)
	if _, err := c.Do(ctx, "SET", "{sw}k", "1").Get(ctx); err != nil { // the client's map now says src
		t.Fatal(err)
	}
	mg := startMigration(t, ctx, cl, slot, src, dst)
	mg.moveAll()
	mg.finish()
	moved, waits := errorCount(t, ctx, src, "MOVED"), commandCount(t, ctx, dst, "wait")

	r, err := c.SendAndWait(ctx, conn.Cmd{Args: []string{"INCR", "{sw}k"}}, 1, time.Second).Get(ctx)
	if err != nil || r.WaitErr != nil || r.Reply.Int != 2 || r.Replicas != 1 {
		t.Fatalf("SendAndWait after the slot moved = %+v, %v; want 2 and 1 replica", r, err)
	}
	if got := errorCount(t, ctx, src, "MOVED") - moved; got != 1 {
		t.Fatalf("MOVED %d times, want 1", got)
	}
	if got := commandCount(t, ctx, dst, "wait") - waits; got != 1 {
		t.Fatalf("the new owner ran WAIT %d times, want 1 (after the resent command)", got)
	}
}

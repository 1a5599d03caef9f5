package conn_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// newClient starts a Client for srv and closes it at the end of the test.
func newClient(t testing.TB, cfg conn.Config) *conn.Client {
	t.Helper()
	c, err := conn.New(cfg)
	if err != nil {
		t.Fatalf("conn.New: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestDoRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr()})
	ctx := ctxT(t)

	v, err := c.Do(ctx, "PING").Get(ctx)
	if err != nil || v.Str != "PONG" {
		t.Fatalf("PING = %v, %v; want PONG", v, err)
	}
	if _, err := c.Do(ctx, "SET", "k", "v").Get(ctx); err != nil {
		t.Fatal(err)
	}
	v, err = c.Do(ctx, "GET", "k").Get(ctx)
	if err != nil || v.Str != "v" {
		t.Fatalf("GET = %v, %v", v, err)
	}
	_, err = c.Do(ctx, "INCR", "k").Get(ctx)
	var se *resp.ServerError
	if !errors.As(err, &se) || se.Prefix != "ERR" {
		t.Fatalf("INCR of a string: err = %v, want a *resp.ServerError with prefix ERR", err)
	}
}

// eventually retries f until it succeeds, for at most 10 s. It is for conditions no event announces (a
// reconnection seen from outside); each failure must be one that the condition being awaited explains.
func eventually(t testing.TB, f func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after 10 s: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

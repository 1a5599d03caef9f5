package conn_test

import (
	"testing"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// Everything over rediss:// against a redis-server serving TLS only, with certificates the test generated: plain
// commands, a script (NOSCRIPT and resend), a pipeline, pub/sub, and a reconnect after CLIENT KILL. Close must
// leave no reader or writer goroutine (goleak in TestMain).
func TestTLSEndToEnd(t *testing.T) {
	srv := redistest.Start(t, redistest.WithTLS(), redistest.WithPassword("tpw"))
	cfg, err := conn.ParseURL(srv.URL() + "?pool_size=2")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS == nil {
		t.Fatalf("ParseURL(%q) gave no TLS config", srv.URL())
	}
	serverName := cfg.TLS.ServerName
	cfg.TLS = srv.TLSConfig()
	if cfg.TLS.ServerName == "" {
		cfg.TLS.ServerName = serverName
	}
	c := newClient(t, cfg)
	ctx := ctxT(t)

	if v, err := c.Do(ctx, "SET", "k", "over-tls").Get(ctx); err != nil || v.Str != "OK" {
		t.Fatalf("SET = %v, %v", v, err)
	}
	if v, err := c.Eval(ctx, incrScript, []string{"n"}, "7").Get(ctx); err != nil || v.Int != 7 {
		t.Fatalf("Eval = %v, %v; want 7", v, err)
	}
	fs := c.Pipeline(ctx, conn.Cmd{Args: []string{"GET", "k"}}, conn.Cmd{Script: incrScript, Keys: []string{"n"}, Args: []string{"1"}})
	if v, err := fs[0].Get(ctx); err != nil || v.Str != "over-tls" {
		t.Fatalf("pipelined GET = %v, %v", v, err)
	}
	if v, err := fs[1].Get(ctx); err != nil || v.Int != 8 {
		t.Fatalf("pipelined Eval = %v, %v; want 8", v, err)
	}

	msgs := make(chan conn.Message, 4)
	if _, err := c.Subscribe("tls-ch", handlerTo(msgs)).Get(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "PUBLISH", "tls-ch", "hi").Get(ctx); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, msgs); m.Payload != "hi" {
		t.Fatalf("message = %+v", m)
	}

	killed, err := srv.DoInt(ctx, "CLIENT", "KILL", "TYPE", "normal")
	if err != nil || killed < 2 {
		t.Fatalf("CLIENT KILL TYPE normal = %d, %v; want the 2 pooled connections", killed, err)
	}
	eventually(t, func() error {
		_, err := c.Do(ctx, "GET", "k").Get(ctx)
		return err
	})
}

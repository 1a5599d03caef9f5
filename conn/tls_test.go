package conn_test

import (
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// rediss:// against a plaintext port fails fast with an error that says so, instead of waiting for DialTimeout
// (redis-server reads the ClientHello as an inline command that never ends) and saying "context deadline exceeded".
func TestTLSAgainstAPlaintextServerFailsFastSayingSo(t *testing.T) {
	srv := redistest.Start(t, redistest.WithPassword("pw"))
	for range 3 { // whether or not the ClientHello happens to hold a newline that makes the server answer
		cfg, err := conn.ParseURL("rediss://:pw@" + srv.Addr() + "?dial_timeout=5s")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		c, err := conn.New(cfg)
		if err == nil {
			c.Close()
			t.Fatal("New over TLS succeeded against a plaintext server")
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("New took %v; want well under the 5 s dial timeout", d)
		}
		if !errors.Is(err, conn.ErrInvalidConfig) || errors.Is(err, conn.ErrUnavailable) ||
			!strings.Contains(err.Error(), "answers without TLS") || !strings.Contains(err.Error(), "use redis://") {
			t.Fatalf("err = %v; want ErrInvalidConfig saying the server speaks plain RESP", err)
		}
	}
}

// A plaintext Client against a TLS-only server is told to use rediss://.
func TestPlaintextAgainstATLSServerSaysSo(t *testing.T) {
	srv := redistest.Start(t, redistest.WithTLS())
	start := time.Now()
	c, err := conn.New(conn.Config{Addr: srv.Addr()})
	if err == nil {
		c.Close()
		t.Fatal("New in plaintext succeeded against a TLS server")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("New took %v; want it to fail at once", d)
	}
	if !errors.Is(err, conn.ErrInvalidConfig) || errors.Is(err, conn.ErrUnavailable) || !strings.Contains(err.Error(), "rediss://") {
		t.Fatalf("err = %v; want ErrInvalidConfig saying the server speaks TLS", err)
	}
}

// The TLS URL options against a TLS-only server that requires client certificates: the CA file and the client
// certificate make it work; without the certificate the server refuses it, without the CA the server's certificate
// does not verify (both ErrInvalidConfig, naming the option to set); insecure_skip_verify skips the check.
func TestTLSURLOptions(t *testing.T) {
	srv := redistest.Start(t, redistest.WithTLS(), redistest.WithConfig("tls-auth-clients", "yes"))
	ca, cert, key := filepath.Join(srv.Dir(), "ca.crt"), filepath.Join(srv.Dir(), "redis.crt"), filepath.Join(srv.Dir(), "redis.key")
	base := "rediss://" + srv.Addr() + "?pool_size=1&"
	ctx := ctxT(t)

	for _, query := range []string{
		"tls_ca_file=" + url.QueryEscape(ca) + "&tls_cert_file=" + url.QueryEscape(cert) + "&tls_key_file=" + url.QueryEscape(key),
		"tls_insecure_skip_verify=true&tls_cert_file=" + url.QueryEscape(cert) + "&tls_key_file=" + url.QueryEscape(key),
	} {
		cfg, err := conn.ParseURL(base + query)
		if err != nil {
			t.Fatal(err)
		}
		c := newClient(t, cfg)
		if v, err := c.Do(ctx, "PING").Get(ctx); err != nil || v.Str != "PONG" {
			t.Fatalf("PING with %s = %v, %v", query, v, err)
		}
	}

	for _, tc := range []struct{ query, says string }{
		{"tls_ca_file=" + url.QueryEscape(ca), "tls_cert_file"},
		{"tls_cert_file=" + url.QueryEscape(cert) + "&tls_key_file=" + url.QueryEscape(key), "tls_ca_file"},
	} {
		cfg, err := conn.ParseURL(base + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		c, err := conn.New(cfg)
		if err == nil {
			c.Close()
			t.Fatalf("New with %s succeeded", tc.query)
		}
		if !errors.Is(err, conn.ErrInvalidConfig) || errors.Is(err, conn.ErrUnavailable) || !strings.Contains(err.Error(), tc.says) {
			t.Fatalf("New with %s: err = %v; want ErrInvalidConfig naming %s", tc.query, err, tc.says)
		}
	}

	for _, bad := range []string{
		"redis://" + srv.Addr() + "?tls_ca_file=" + url.QueryEscape(ca), // not a rediss scheme
		base + "tls_cert_file=" + url.QueryEscape(cert),                 // without its key
		base + "tls_ca_file=/nonexistent/ca.pem",
		base + "tls_ca_file=" + url.QueryEscape(key), // not a certificate
		base + "tls_insecure_skip_verify=maybe",
	} {
		if _, err := conn.ParseURL(bad); !errors.Is(err, conn.ErrInvalidConfig) {
			t.Errorf("ParseURL(%s) err = %v; want ErrInvalidConfig", bad, err)
		}
	}
}

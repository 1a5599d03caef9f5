package conn_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

func TestAuthWithPassword(t *testing.T) {
	srv := redistest.Start(t, redistest.WithPassword("pw"))
	c := newClient(t, conn.Config{Addr: srv.Addr(), Password: "pw"})
	ctx := ctxT(t)
	if v, err := c.Do(ctx, "ACL", "WHOAMI").Get(ctx); err != nil || v.Str != "default" {
		t.Fatalf("ACL WHOAMI = %v, %v; want default", v, err)
	}
}

// A server that refuses the credentials makes New fail with the server's reason, without retrying forever.
func TestNewFailsOnWrongOrMissingPassword(t *testing.T) {
	srv := redistest.Start(t, redistest.WithPassword("pw"))
	for _, tc := range []struct {
		password, prefix string
	}{{"wrong", "WRONGPASS"}, {"", "NOAUTH"}} {
		c, err := conn.New(conn.Config{Addr: srv.Addr(), Password: tc.password})
		if err == nil {
			c.Close()
			t.Fatalf("New with password %q succeeded", tc.password)
		}
		var se *resp.ServerError
		if !errors.As(err, &se) || se.Prefix != tc.prefix || !errors.Is(err, conn.ErrUnavailable) {
			t.Fatalf("New with password %q: err = %v; want ErrUnavailable wrapping a %s server error", tc.password, err, tc.prefix)
		}
	}
}

func TestAuthWithACLUser(t *testing.T) {
	srv := redistest.Start(t, redistest.WithACLUser("bob", "bobpw"))
	c := newClient(t, conn.Config{Addr: srv.Addr(), Username: "bob", Password: "bobpw"})
	ctx := ctxT(t)
	if v, err := c.Do(ctx, "ACL", "WHOAMI").Get(ctx); err != nil || v.Str != "bob" {
		t.Fatalf("ACL WHOAMI = %v, %v; want bob", v, err)
	}
}

// SELECT and CLIENT SETNAME apply to every connection of the pool and to the pub/sub connection.
func TestSelectAndClientNameOnEveryConnection(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr(), DB: 5, ClientName: "locksmith-test", PoolSize: 3})
	ctx := ctxT(t)
	if _, err := c.Do(ctx, "SET", "k", "v").Get(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscribe("ch", func(conn.Message) {}).Get(ctx); err != nil {
		t.Fatal(err)
	}
	keys, err := srv.Info(ctx, "keyspace")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := keys["db5"]; !ok || len(keys) != 1 {
		t.Fatalf("INFO keyspace = %v; want only db5", keys)
	}
	list, err := srv.DoString(ctx, "CLIENT", "LIST")
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for line := range strings.SplitSeq(strings.TrimSpace(list), "\n") {
		if strings.Contains(line, " name=locksmith-test ") {
			named++
			if !strings.Contains(line, " db=5 ") {
				t.Errorf("connection not on db 5: %s", line)
			}
		}
	}
	if named != 5 {
		t.Fatalf("%d connections named locksmith-test; want 5 (3 pooled, the latency lane, pub/sub)\n%s", named, list)
	}
}

func TestURLConfigEndToEnd(t *testing.T) {
	srv := redistest.Start(t, redistest.WithACLUser("carol", "cpw"))
	cfg, err := conn.ParseURL(srv.URL() + "/2?pool_size=1&client_name=from-url")
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, cfg)
	ctx := ctxT(t)
	v, err := c.Do(ctx, "CLIENT", "INFO").Get(ctx)
	if err != nil || !strings.Contains(v.Str, " db=2 ") || !strings.Contains(v.Str, " name=from-url ") || !strings.Contains(v.Str, " user=carol ") {
		t.Fatalf("CLIENT INFO = %v, %v; want db=2 name=from-url user=carol", v, err)
	}
}

func TestNewFailsFastWhenUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c, err := conn.New(conn.Config{Addr: addr})
	if err == nil {
		c.Close()
		t.Fatal("New succeeded against a closed port")
	}
	if !errors.Is(err, conn.ErrUnavailable) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err = %v; want ErrUnavailable wrapping ECONNREFUSED", err)
	}
}

// A server that accepts but never answers the handshake makes New fail after DialTimeout with a timeout.
func TestNewTimesOutOnASilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted []net.Conn
	done := make(chan struct{})
	go func() { // owner: this test; ends when the listener closes
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted = append(accepted, c) // never read, never answered
		}
	}()
	defer func() {
		ln.Close()
		<-done
		for _, c := range accepted {
			c.Close()
		}
	}()
	c, err := conn.New(conn.Config{Addr: ln.Addr().String(), DialTimeout: 150 * time.Millisecond})
	if err == nil {
		c.Close()
		t.Fatal("New succeeded against a silent server")
	}
	var ce *conn.ConnError
	if !errors.As(err, &ce) || !ce.Timeout() || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, conn.ErrUnavailable) {
		t.Fatalf("err = %v; want an ErrUnavailable ConnError that is a timeout", err)
	}
}

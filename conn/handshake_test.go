package conn_test

import (
	"context"
	"errors"
	"fmt"
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

// Every refusal of the credentials or of a permission the handshake needs makes New fail at once with an error
// matching ErrAuth and not ErrUnavailable (a retry-while-unavailable loop must not retry it), naming the step and
// carrying the server's reply.
func TestNewFailsWithErrAuthOnEveryRefusal(t *testing.T) {
	srv := redistest.Start(t, redistest.WithPassword("pw"))
	open := redistest.Start(t) // no password at all
	ctx := ctxT(t)
	if _, err := srv.Do(ctx, "ACL", "SETUSER", "noselect", "on", ">npw", "~*", "&*", "+@all", "-select"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "ACL", "SETUSER", "noname", "on", ">npw", "~*", "&*", "+@all", "-client|setname"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		cfg    conn.Config
		step   string
		prefix string
	}{
		{"wrong password", conn.Config{Addr: srv.Addr(), Password: "wrong"}, "AUTH", "WRONGPASS"},
		{"wrong user", conn.Config{Addr: srv.Addr(), Username: "nobody", Password: "pw"}, "AUTH", "WRONGPASS"},
		{"no password", conn.Config{Addr: srv.Addr()}, "PING", "NOAUTH"},
		{"no password, SELECT first", conn.Config{Addr: srv.Addr(), DB: 1}, "SELECT", "NOAUTH"},
		{"password the server does not want", conn.Config{Addr: open.Addr(), Password: "pw"}, "AUTH", "ERR"},
		{"NOPERM on SELECT", conn.Config{Addr: srv.Addr(), Username: "noselect", Password: "npw", DB: 2}, "SELECT", "NOPERM"},
		{"NOPERM on CLIENT SETNAME", conn.Config{Addr: srv.Addr(), Username: "noname", Password: "npw", ClientName: "x"},
			"CLIENT SETNAME", "NOPERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			c, err := conn.New(tc.cfg)
			if err == nil {
				c.Close()
				t.Fatal("New succeeded")
			}
			if !errors.Is(err, conn.ErrAuth) || errors.Is(err, conn.ErrUnavailable) || errors.Is(err, conn.ErrInvalidConfig) {
				t.Fatalf("err = %v; want ErrAuth, not ErrUnavailable", err)
			}
			var he *conn.HandshakeError
			var se *resp.ServerError
			if !errors.As(err, &he) || he.Step != tc.step || !errors.As(err, &se) || se.Prefix != tc.prefix {
				t.Fatalf("err = %v; want a HandshakeError at %s with a %s reply", err, tc.step, tc.prefix)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("New took %v to fail; a refusal must fail it at once", d)
			}
			if !strings.Contains(err.Error(), "ACL") || (tc.cfg.Password != "" && strings.Contains(err.Error(), tc.cfg.Password+" ")) {
				t.Fatalf("err = %q; want it to say what to do, without the password", err)
			}
		})
	}
}

// A database the server does not have, or a client name it refuses, is a configuration error, not an outage.
func TestNewFailsWithErrInvalidConfigOnRefusedSelect(t *testing.T) {
	srv := redistest.Start(t)
	c, err := conn.New(conn.Config{Addr: srv.Addr(), DB: 99})
	if err == nil {
		c.Close()
		t.Fatal("New with DB 99 succeeded")
	}
	var he *conn.HandshakeError
	if !errors.Is(err, conn.ErrInvalidConfig) || errors.Is(err, conn.ErrUnavailable) || errors.Is(err, conn.ErrAuth) ||
		!errors.As(err, &he) || he.Step != "SELECT" || !strings.Contains(err.Error(), "DB index is out of range") {
		t.Fatalf("err = %v; want ErrInvalidConfig from SELECT naming the server's reason", err)
	}
	if _, err := conn.New(conn.Config{Addr: srv.Addr(), ClientName: "two words"}); !errors.Is(err, conn.ErrInvalidConfig) {
		t.Fatalf("ClientName with a space: err = %v; want ErrInvalidConfig before dialling", err)
	}
}

// Credentials revoked while the Client runs: commands fail with ErrAuth (not ErrUnavailable) once the connections
// are re-made, and the Client recovers by itself once the server accepts them again.
func TestCredentialsRevokedThenRestored(t *testing.T) {
	srv := redistest.Start(t, redistest.WithPassword("admin"))
	ctx := ctxT(t)
	if _, err := srv.Do(ctx, "ACL", "SETUSER", "app", "on", ">apw", "~*", "&*", "+@all"); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, conn.Config{Addr: srv.Addr(), Username: "app", Password: "apw", PoolSize: 1,
		DisableLatencyLane: true, ReconnectMinBackoff: 10 * time.Millisecond, ReconnectMaxBackoff: 200 * time.Millisecond})
	if _, err := c.Do(ctx, "PING").Get(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "ACL", "SETUSER", "app", "resetpass", ">other"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "CLIENT", "KILL", "USER", "app"); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		_, err := c.Do(ctx, "PING").Get(ctx)
		if errors.Is(err, conn.ErrAuth) && !errors.Is(err, conn.ErrUnavailable) {
			return nil
		}
		return fmt.Errorf("PING err = %v; want ErrAuth once the reconnection is refused", err)
	})
	if _, err := srv.Do(ctx, "ACL", "SETUSER", "app", ">apw"); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		_, err := c.Do(ctx, "PING").Get(ctx)
		return err
	})
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

// A handshake answered with something other than what the step must get fails New with a *HandshakeError naming
// the step and quoting what came back; a transient refusal (LOADING) stays ErrUnavailable.
func TestHandshakeWrongAnswersFailNew(t *testing.T) {
	for _, tc := range []struct {
		answer, reply string
	}{
		{"+HELLO\r\n", `"+HELLO\r\n"`},
		{":1\r\n", `":1\r\n"`},
		{"$4\r\nPONG\r\n", `"$4\r\nPONG\r\n"`},
		{"-LOADING Redis is loading the dataset in memory\r\n", `"-LOADING Redis is loading the dataset in memory\r\n"`},
		{"+\x1b[2J\r\n", `"+\x1b[2J\r\n"`},
	} {
		f := startFake(t, func(int, []string, net.Conn) bool { return false })
		f.answerPing = func(_ int, c net.Conn) bool { return reply(c, tc.answer) }
		c, err := conn.New(conn.Config{Addr: f.addr()})
		if err == nil {
			c.Close()
			t.Fatalf("New succeeded with PING answered %q", tc.answer)
		}
		var he *conn.HandshakeError
		if !errors.As(err, &he) || he.Step != "PING" || he.Reply != tc.reply || !errors.Is(err, conn.ErrUnavailable) {
			t.Fatalf("PING answered %q: err = %v; want ErrUnavailable with a HandshakeError at PING quoting %s",
				tc.answer, err, tc.reply)
		}
		if strings.ContainsAny(err.Error(), "\x1b\r\n") {
			t.Fatalf("err = %q holds control characters", err)
		}
	}
}

// A server that answers the handshake a byte at a time, never finishing, fails New at DialTimeout: the whole
// handshake is bounded by it, however many bytes keep coming.
func TestHandshakeIsBoundedByTheDialTimeout(t *testing.T) {
	f := startFake(t, func(int, []string, net.Conn) bool { return false })
	f.answerPing = func(_ int, c net.Conn) bool {
		if !reply(c, "+") {
			return false
		}
		tick := time.NewTicker(20 * time.Millisecond) // a slow server, not a synchronisation
		defer tick.Stop()
		for range tick.C {
			if !reply(c, "P") {
				return false
			}
		}
		return false
	}
	start := time.Now()
	c, err := conn.New(conn.Config{Addr: f.addr(), DialTimeout: 300 * time.Millisecond})
	took := time.Since(start)
	if err == nil {
		c.Close()
		t.Fatal("New succeeded")
	}
	var ce *conn.ConnError
	if !errors.As(err, &ce) || !ce.Timeout() || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want a timeout", err)
	}
	if took > 2*time.Second {
		t.Fatalf("New took %v with a 300 ms dial timeout", took)
	}
}

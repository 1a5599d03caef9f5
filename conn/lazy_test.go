package conn_test

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// freePort returns a loopback port nothing listens on (it was free a moment ago).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// With lazy_connect, New succeeds while the server is down, commands fail fast with ErrUnavailable, and once a
// redis-server starts on the port the same Client serves them, pub/sub included.
func TestLazyConnectServesOnceTheServerStarts(t *testing.T) {
	port := freePort(t)
	cfg, err := conn.ParseURL("redis://127.0.0.1:" + strconv.Itoa(port) +
		"?lazy_connect=true&reconnect_min_backoff=10ms&reconnect_max_backoff=100ms")
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, cfg)
	ctx := ctxT(t)
	for range 3 {
		start := time.Now()
		_, err := c.Do(ctx, "PING").Get(ctx)
		if !errors.Is(err, conn.ErrUnavailable) {
			t.Fatalf("PING with the server down: err = %v; want ErrUnavailable", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("PING with the server down took %v; want it to fail fast", d)
		}
	}
	if _, err := c.Subscribe("ch", func(conn.Message) {}).Get(ctx); !errors.Is(err, conn.ErrUnavailable) {
		t.Fatalf("Subscribe with the server down: err = %v; want ErrUnavailable", err)
	}

	redistest.Start(t, redistest.WithPort(port))
	eventually(t, func() error {
		_, err := c.Do(ctx, "SET", "k", "v").Get(ctx)
		return err
	})
	if v, err := c.Do(ctx, "GET", "k").Get(ctx); err != nil || v.Str != "v" {
		t.Fatalf("GET = %v, %v", v, err)
	}
	eventually(t, func() error {
		_, err := c.Subscribe("ch", func(conn.Message) {}).Get(ctx)
		return err
	})
}

// Without lazy connection New fails at once; with it, a refused password is reported by the commands.
func TestLazyConnectReportsRefusalsThroughCommands(t *testing.T) {
	srv := redistest.Start(t, redistest.WithPassword("pw"))
	if c, err := conn.New(conn.Config{Addr: srv.Addr(), Password: "wrong"}); err == nil {
		c.Close()
		t.Fatal("eager New with a wrong password succeeded")
	}
	c := newClient(t, conn.Config{Addr: srv.Addr(), Password: "wrong", LazyConnect: true})
	ctx := ctxT(t)
	eventually(t, func() error {
		_, err := c.Do(ctx, "PING").Get(ctx)
		if errors.Is(err, conn.ErrAuth) && !errors.Is(err, conn.ErrUnavailable) {
			return nil
		}
		return fmt.Errorf("PING err = %v; want ErrAuth", err)
	})
}

// Sentinel and cluster Clients start lazily too with nothing answering: commands fail with ErrUnavailable after
// RetryTimeout, and Close leaves nothing running (goleak in TestMain).
func TestLazyConnectTopologiesWithNothingUp(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	for _, cfg := range []conn.Config{
		{SentinelAddrs: []string{addr}, MasterName: "m"},
		{ClusterAddrs: []string{addr}},
	} {
		cfg.LazyConnect = true
		cfg.RetryTimeout = 200 * time.Millisecond
		cfg.DialTimeout = 200 * time.Millisecond
		c, err := conn.New(cfg)
		if err != nil {
			t.Fatalf("lazy New(%v): %v", cfg, err)
		}
		ctx := ctxT(t)
		if _, err := c.Do(ctx, "PING").Get(ctx); !errors.Is(err, conn.ErrUnavailable) {
			t.Errorf("PING through %v: err = %v; want ErrUnavailable", cfg, err)
		}
		if _, err := c.Subscribe("ch", func(conn.Message) {}).Get(ctx); !errors.Is(err, conn.ErrUnavailable) {
			t.Errorf("Subscribe through %v: err = %v; want ErrUnavailable", cfg, err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A lazy Sentinel Client started while every Sentinel is down finds the master once they come back, without being
// re-created.
func TestLazySentinelClientFindsTheMasterLater(t *testing.T) {
	rs := redistest.StartReplicaSet(t)
	for _, s := range rs.Sentinels() {
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, conn.Config{SentinelAddrs: rs.SentinelAddrs(), MasterName: rs.MasterName(), LazyConnect: true,
		RetryTimeout: 200 * time.Millisecond, DialTimeout: 500 * time.Millisecond})
	ctx := ctxT(t)
	if _, err := c.Do(ctx, "PING").Get(ctx); !errors.Is(err, conn.ErrUnavailable) {
		t.Fatalf("PING with the Sentinels down: err = %v; want ErrUnavailable", err)
	}
	for _, s := range rs.Sentinels() {
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, func() error {
		_, err := c.Do(ctx, "SET", "k", "v").Get(ctx)
		return err
	})
}

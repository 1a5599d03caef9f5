package conn_test

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// Replies up to the limits arrive whole on both transports, however they are cut into reads: a bulk string of
// exactly the default limit, and an array of 50,000 elements, from a real server; one over the bulk limit fails
// with a *resp.LimitError, and succeeds once the limit is raised through the URL.
func TestRepliesUpToTheLimitsArriveWhole(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxT(t)
	big := strings.Repeat("x", resp.DefaultMaxBulkLen)
	if _, err := srv.Do(ctx, "SET", "big", big); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "SET", "bigger", big+"y"); err != nil {
		t.Fatal(err)
	}
	args := []string{"RPUSH", "list"}
	for i := range 50000 {
		args = append(args, strconv.Itoa(i))
	}
	if _, err := srv.Do(ctx, args...); err != nil {
		t.Fatal(err)
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c := newClient(t, conn.Config{Addr: srv.Addr(), PoolSize: 1, DisableLatencyLane: tr.noLane})
			if v, err := c.Do(ctx, "GET", "big").Get(ctx); err != nil || v.Str != big {
				t.Fatalf("GET of %d bytes: %d bytes, %v", len(big), len(v.Str), err)
			}
			v, err := c.Do(ctx, "LRANGE", "list", "0", "-1").Get(ctx)
			if err != nil || len(v.Elems) != 50000 || v.Elems[49999].Str != "49999" {
				t.Fatalf("LRANGE: %d elements, %v", len(v.Elems), err)
			}
			_, err = c.Do(ctx, "GET", "bigger").Get(ctx)
			var le *resp.LimitError
			if !errors.As(err, &le) || le.Limit != "MaxBulkLen" || !strings.Contains(err.Error(), "max_bulk_len") {
				t.Fatalf("GET over the limit: err = %v; want a LimitError on MaxBulkLen saying how to raise it", err)
			}
			if v, err := c.Do(ctx, "GET", "big").Get(ctx); err != nil || len(v.Str) != len(big) {
				t.Fatalf("GET after the reconnection: %d bytes, %v", len(v.Str), err)
			}
		})
	}
	cfg, err := conn.ParseURL("redis://" + srv.Addr() + "?max_bulk_len=9MiB&pool_size=1")
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, cfg)
	if v, err := c.Do(ctx, "GET", "bigger").Get(ctx); err != nil || len(v.Str) != len(big)+1 {
		t.Fatalf("GET with max_bulk_len=9MiB: %d bytes, %v", len(v.Str), err)
	}
}

// Replies cut into single bytes, several in one write, are decoded in order on both transports: every boundary
// of a partial reply is crossed.
func TestRepliesCutIntoSingleBytes(t *testing.T) {
	const replies = "*3\r\n$3\r\nabc\r\n:7\r\n+OK\r\n" + "$5\r\nhello\r\n" + "*2\r\n*1\r\n:1\r\n$-1\r\n"
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			f := startFake(t, func(i int, cmd []string, c net.Conn) bool {
				if cmd[0] != "GET" {
					return true // answered by the GET's write
				}
				for j := range len(replies) {
					if !reply(c, replies[j:j+1]) {
						return false
					}
				}
				return true
			})
			c := newClient(t, conn.Config{Addr: f.addr(), PoolSize: 1, DisableLatencyLane: tr.noLane})
			ctx := ctxT(t)
			fs := c.Pipeline(ctx, conn.Cmd{Args: []string{"GET", "a"}}, conn.Cmd{Args: []string{"ECHO", "b"}},
				conn.Cmd{Args: []string{"ECHO", "c"}})
			v0, err0 := fs[0].Get(ctx)
			v1, err1 := fs[1].Get(ctx)
			v2, err2 := fs[2].Get(ctx)
			if err0 != nil || err1 != nil || err2 != nil {
				t.Fatalf("errors %v, %v, %v", err0, err1, err2)
			}
			if len(v0.Elems) != 3 || v0.Elems[0].Str != "abc" || v0.Elems[1].Int != 7 || v0.Elems[2].Str != "OK" ||
				v1.Str != "hello" || len(v2.Elems) != 2 || v2.Elems[0].Elems[0].Int != 1 || !v2.Elems[1].Null {
				t.Fatalf("replies %v, %v, %v", v0, v1, v2)
			}
		})
	}
}

package conn_test

import (
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// Hostile replies on every connection of a Client at the same time (PoolSize 4 and the latency lane: an event
// loop and the stream transport together) each fail their call with the typed error before the response timeout,
// the heap's peak stays within heapBound per connection in all, and every connection is re-made: the Client then
// serves as many concurrent commands as it has connections from the real server behind the fake.
func TestHostileRepliesOnEveryConnectionAtOnce(t *testing.T) {
	const poolSize = 4
	const conns = poolSize + 1 // and the lane
	srv := redistest.Start(t)
	for _, hc := range hostileCases {
		t.Run(hc.name, func(t *testing.T) {
			forward := relay(t, srv.Addr())
			var arrived atomic.Int32
			all := make(chan struct{})
			f := startFake(t, func(i int, cmd []string, c net.Conn) bool {
				if cmd[0] != "GET" || cmd[1] != "hostile" {
					return forward(i, cmd, c)
				}
				// Each connection holds its hostile reply until every connection has its GET, so that all the
				// replies stream at once. A connection that got two would never let the count reach conns.
				if arrived.Add(1) == conns {
					close(all)
				}
				select {
				case <-all:
				case <-time.After(10 * time.Second):
					t.Errorf("only %d of the %d connections received a GET hostile", arrived.Load(), conns)
					return false
				}
				return streamHostile(c, hc.head, hc.chunk)
			})
			rec := newEventLog()
			c := newClient(t, conn.Config{Addr: f.addr(), PoolSize: poolSize, OnEvent: rec.add})
			ctx := ctxT(t)
			if n := rec.count(conn.EventConnected, conn.RoleCommand); n != conns {
				t.Fatalf("%d connections open after New; want %d", n, conns)
			}

			// Issued back to back, the GETs go one per connection: the first to the lane (the Client is idle),
			// each next one to the open connection with nothing in flight (least-pending). An idle lane takes a
			// command only once it knows the server has not closed it, which on the portable path means a reader
			// on its socket: a command awaited through Done (not driven by a Get) leaves its background reader
			// there, on either path.
			warm := c.Do(ctx, "PING")
			select {
			case <-warm.Done():
			case <-ctx.Done():
			}
			if _, err := warm.Get(ctx); err != nil {
				t.Fatalf("PING: %v", err)
			}
			stop := heapPeak()
			start := time.Now()
			futs := make([]*future.Future[resp.Value], conns)
			for i := range futs {
				futs[i] = c.Do(ctx, "GET", "hostile")
			}
			errs := make([]error, conns)
			took := make([]time.Duration, conns) // when Get returned: at most that long after the GETs went out
			for i, fu := range futs {
				_, errs[i] = fu.Get(ctx)
				took[i] = time.Since(start)
			}
			grew := stop()
			for i, err := range errs {
				checkRefused(t, err, hc.limit, took[i], grew, conns*heapBound)
			}

			eventually(t, func() error {
				if n := rec.count(conn.EventReconnected, conn.RoleCommand); n < conns {
					return fmt.Errorf("%d of the %d connections re-made", n, conns)
				}
				return nil
			})
			for i := range futs {
				futs[i] = c.Do(ctx, "SET", "k", "v")
			}
			for _, fu := range futs {
				if v, err := fu.Get(ctx); err != nil || v.Str != "OK" {
					t.Fatalf("SET after the hostile replies = %v, %v; want OK from the real server", v, err)
				}
			}
		})
	}
}

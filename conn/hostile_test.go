package conn_test

import (
	"errors"
	"net"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// heapBound is what a hostile reply may add to the heap at its peak: 4 times the smallest default limit involved
// (a line, 1 MiB). Before the limits, one such reply took the heap to 1-1.45 GiB.
const heapBound = 4 * resp.DefaultMaxLineLen

// nestedLineBound is what an endless line inside an array (a pushed message's payload) may add: the partial buffer
// of an array is bounded by the reply limit, not the line limit, so it doubles once more, to twice the line limit,
// before the decoder sees the line over MaxLineLen, and the smaller buffers it outgrew count until swept. That is
// four times the line limit by itself, plus the reader's buffer and the fake's 64 KiB block in the same heap.
const nestedLineBound = heapBound + 128<<10

// hostileCase is a reply a broken proxy or an attacker could send, endless: the client must refuse it on the bytes
// that show it over a limit, without reading (or buffering) the rest.
type hostileCase struct {
	name  string
	head  string // sent first
	chunk byte   // then repeated without end
	limit string // the limit that refuses it
}

var hostileCases = []hostileCase{
	{"bulk string of 512 MiB", "$536870912\r\n", 'A', "MaxBulkLen"},
	{"endless simple string", "+", 'A', "MaxLineLen"},
	{"array of 100 million elements", "*100000000\r\n", ':', "MaxArrayLen"},
}

// streamHostile writes head and then chunk bytes until the client closes the connection (or 1 GiB went out, a
// backstop should the client never close it).
func streamHostile(c net.Conn, head string, chunk byte) bool {
	if !reply(c, head) {
		return false
	}
	block := make([]byte, 64<<10)
	for i := range block {
		block[i] = chunk
		if chunk == ':' {
			block[i] = ":1\r\n"[i%4] // endless array elements
		}
	}
	for sent := 0; sent < 1<<30; sent += len(block) {
		if _, err := c.Write(block); err != nil {
			return false
		}
	}
	return false
}

// heapPeak samples the heap's live and unswept objects every 200 µs until stop, and returns how far the peak rose
// above the heap at the start (after a GC).
func heapPeak() (stop func() int64) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() int64 {
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64())
	}
	base := read()
	var peak atomic.Int64
	peak.Store(base)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owner: heapPeak's caller, through stop
		defer wg.Done()
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		wg.Wait()
		if v := read(); v > peak.Load() {
			peak.Store(v)
		}
		return peak.Load() - base
	}
}

// hostileOnce returns a fake behaviour that answers the first GET hostile with hc's endless reply and relays
// every other command with forward.
func hostileOnce(hc hostileCase, forward func(i int, cmd []string, c net.Conn) bool) func(i int, cmd []string, c net.Conn) bool {
	var hostile atomic.Bool
	return func(i int, cmd []string, c net.Conn) bool {
		if cmd[0] == "GET" && cmd[1] == "hostile" && hostile.CompareAndSwap(false, true) {
			return streamHostile(c, hc.head, hc.chunk)
		}
		return forward(i, cmd, c)
	}
}

// checkRefused fails t unless err matches ErrConnLost (not ErrTimeout) with a *resp.LimitError on limit, took is
// under the response timeout, and the heap's peak rose by at most bound; it logs the figures.
func checkRefused(t *testing.T, err error, limit string, took time.Duration, grew, bound int64) {
	t.Helper()
	var le *resp.LimitError
	if !errors.As(err, &le) || le.Limit != limit || !errors.Is(err, conn.ErrConnLost) || errors.Is(err, conn.ErrTimeout) {
		t.Fatalf("err = %v; want ErrConnLost caused by a *resp.LimitError on %s", err, limit)
	}
	if took >= conn.DefaultResponseTimeout {
		t.Errorf("the error came after %v, not before the %v response timeout", took, conn.DefaultResponseTimeout)
	}
	if grew > bound {
		t.Errorf("the heap rose by %d bytes at its peak; want at most %d", grew, bound)
	}
	t.Logf("%v after %v; heap peak +%d KiB", err, took.Round(time.Millisecond), grew>>10)
}

// refuseHostileGet sends GET hostile on c, which its fake (hostileOnce) answers with hc: the call fails with the
// *resp.LimitError before the response timeout, the heap's peak within heapBound; then c serves SET and GET from
// the real server behind the fake, on the connection that replaced the refused one.
func refuseHostileGet(t *testing.T, c *conn.Client, hc hostileCase) {
	t.Helper()
	ctx := ctxT(t)
	stop := heapPeak()
	start := time.Now()
	_, err := c.Do(ctx, "GET", "hostile").Get(ctx)
	took := time.Since(start)
	grew := stop()
	checkRefused(t, err, hc.limit, took, grew, heapBound)

	if _, err := c.Do(ctx, "SET", "k", "v").Get(ctx); err != nil {
		t.Fatalf("SET after the hostile reply: %v", err)
	}
	if v, err := c.Do(ctx, "GET", "k").Get(ctx); err != nil || v.Str != "v" {
		t.Fatalf("GET after the hostile reply = %v, %v; want v from the real server", v, err)
	}
}

// A hostile reply to a command fails that command with a *resp.LimitError naming the limit, before the response
// timeout, with the heap's peak within heapBound; the connection is replaced, and the Client then serves commands
// from a real redis-server (reached through the fake, which relays every other command).
func TestHostileRepliesAreRefusedWithinTheLimits(t *testing.T) {
	srv := redistest.Start(t)
	for _, hc := range hostileCases {
		for _, tr := range transports {
			t.Run(hc.name+"/"+tr.name, func(t *testing.T) {
				f := startFake(t, hostileOnce(hc, relay(t, srv.Addr())))
				c := newClient(t, conn.Config{Addr: f.addr(), PoolSize: 1, DisableLatencyLane: tr.noLane})
				refuseHostileGet(t, c, hc)
			})
		}
	}
}

// A server that answers the handshake's PING with an endless 512 MiB bulk string fails New at once with a
// *HandshakeError naming PING and holding the *resp.LimitError, the heap's peak within heapBound; with a real
// redis-server behind the same address later, New succeeds.
func TestHostileHandshakeReplyFailsNew(t *testing.T) {
	srv := redistest.Start(t)
	var hostile atomic.Bool
	hostile.Store(true)
	f := startFake(t, relay(t, srv.Addr()))
	f.answerPing = func(_ int, c net.Conn) bool {
		if hostile.Load() {
			return streamHostile(c, "$536870912\r\n", 'A')
		}
		return reply(c, "+PONG\r\n")
	}

	stop := heapPeak()
	start := time.Now()
	c, err := conn.New(conn.Config{Addr: f.addr(), DialTimeout: 2 * time.Second})
	took := time.Since(start)
	grew := stop()
	if err == nil {
		c.Close()
		t.Fatal("New succeeded against a server answering PING with 512 MiB")
	}
	var he *conn.HandshakeError
	var le *resp.LimitError
	if !errors.As(err, &he) || he.Step != "PING" || !errors.As(err, &le) || !errors.Is(err, conn.ErrUnavailable) {
		t.Fatalf("err = %v; want ErrUnavailable with a HandshakeError at PING holding a LimitError", err)
	}
	if len(he.Reply) > 200 {
		t.Errorf("HandshakeError.Reply holds %d bytes; want it truncated", len(he.Reply))
	}
	if took >= 2*time.Second {
		t.Errorf("New failed after %v, not before its 2 s dial timeout", took)
	}
	if grew > heapBound {
		t.Errorf("the heap rose by %d bytes at its peak; want at most %d", grew, heapBound)
	}
	t.Logf("%v after %v; heap peak +%d KiB", err, took.Round(time.Millisecond), grew>>10)

	hostile.Store(false)
	c = newClient(t, conn.Config{Addr: f.addr()})
	ctx := ctxT(t)
	if _, err := c.Do(ctx, "SET", "k", "v").Get(ctx); err != nil {
		t.Fatalf("SET through a sane handshake: %v", err)
	}
}

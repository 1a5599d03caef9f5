package rlock

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// The server cost of a retry-safe release, ours (conditional on the expected hold count) against Redisson's unlock
// latch, measured where it is paid: INFO commandstats usec_per_call of the EVALSHA, and the memory the latch keys
// take. Run:
//
//	go test -run '^$' -bench BenchmarkReleaseServerCost -benchtime 200000x ./rlock

// latchReleaseSrc is a release in the manner of Redisson 3.2x's retry-safe unlock, written for this comparison: it
// answers a retry from the latch key redisson_unlock_latch:{name}:<requestId>, and records every result there with
// an expiry.
//
//	KEYS[1] lock, KEYS[2] channel, KEYS[3] latch; ARGV[1] message, ARGV[2] lease ms, ARGV[3] owner, ARGV[4] latch ttl ms
const latchReleaseSrc = `local v = redis.call('get', KEYS[3])
if v then return tonumber(v) end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
local n = redis.call('hincrby', KEYS[1], ARGV[3], -1)
local r = 1
if n > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  r = 0
else
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], ARGV[1])
end
redis.call('set', KEYS[3], r, 'px', ARGV[4])
return r`

// plainReleaseSrc is the release without any retry safety (BENCHMARKS.md "release"), the floor.
const plainReleaseSrc = `if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
local n = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if n > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`

// pipe is a raw pipelined RESP2 connection: the benchmark must load the server, not measure a client.
type pipe struct {
	c   net.Conn
	w   *bufio.Writer
	buf []byte
	dec resp.Decoder
	in  []byte
}

func dialPipe(tb testing.TB, addr string) *pipe {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return &pipe{c: c, w: bufio.NewWriterSize(c, 1<<16)}
}

func (p *pipe) send(args ...string) {
	p.buf = resp.AppendCommand(p.buf[:0], args...)
	p.w.Write(p.buf)
}

// recv flushes and reads n replies, failing on an error reply.
func (p *pipe) recv(tb testing.TB, n int) { p.recvInto(tb, n, nil) }

// recvInto is recv that also appends the replies to got (when non-nil) and returns it.
func (p *pipe) recvInto(tb testing.TB, n int, got []resp.Value) []resp.Value {
	if err := p.w.Flush(); err != nil {
		tb.Fatal(err)
	}
	tmp := make([]byte, 1<<16)
	for n > 0 {
		v, k, err := p.dec.Decode(p.in)
		if err == nil {
			p.in = p.in[k:]
			if v.Type == resp.ErrorReply {
				tb.Fatalf("server error: %s", v.Str)
			}
			if got != nil {
				got = append(got, v)
			}
			n--
			continue
		}
		if !errors.Is(err, resp.ErrIncomplete) {
			tb.Fatal(err)
		}
		r, err := p.c.Read(tmp)
		if err != nil {
			tb.Fatal(err)
		}
		p.in = append(p.in, tmp[:r]...)
	}
	return got
}

func shaOf(src string) string {
	s := sha1.Sum([]byte(src))
	return hex.EncodeToString(s[:])
}

func BenchmarkReleaseServerCost(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	loadScripts(b, srv, scripts.LockAcquire.Source, scripts.LockRelease.Source, latchReleaseSrc, plainReleaseSrc)
	const depth = 64 // pipeline depth, as in BENCHMARKS.md's -P runs
	const lease = "30000"
	cases := []struct {
		name string
		args func(key, ch, owner string, i int) []string
	}{
		{"conditional", func(key, ch, owner string, _ int) []string {
			return plainEval(shaOf(scripts.LockRelease.Source), key, owner, "1", lease, "publish")
		}},
		{"redisson-latch", func(key, ch, owner string, i int) []string {
			latch := "redisson_unlock_latch:{" + key + "}:" + strconv.Itoa(i) + "-0f9e8d7c6b5a"
			return []string{"EVALSHA", shaOf(latchReleaseSrc), "3", key, ch, latch, scripts.UnlockMessage, lease, owner, "13500"}
		}},
		{"plain-unsafe", func(key, ch, owner string, _ int) []string {
			return []string{"EVALSHA", shaOf(plainReleaseSrc), "2", key, ch, scripts.UnlockMessage, lease, owner}
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			if _, err := srv.Do(ctx, "FLUSHALL"); err != nil {
				b.Fatal(err)
			}
			p := dialPipe(b, srv.Addr())
			acq := shaOf(scripts.LockAcquire.Source)
			for i := 0; i < b.N; i += depth {
				k := min(depth, b.N-i)
				for j := i; j < i+k; j++ {
					p.send(plainEval(acq, "bench:"+strconv.Itoa(j), lease, ownerA, "", "publish")...)
				}
				p.recv(b, k)
			}
			mem0 := infoInt(b, srv, "memory", "used_memory")
			resetStats(b, srv)
			b.ResetTimer()
			for i := 0; i < b.N; i += depth {
				k := min(depth, b.N-i)
				for j := i; j < i+k; j++ {
					key := "bench:" + strconv.Itoa(j)
					p.send(tc.args(key, channelName(key), ownerA, j)...)
				}
				p.recv(b, k)
			}
			b.StopTimer()
			b.ReportMetric(statField(b, commandStats(b, srv)["cmdstat_evalsha"], "usec_per_call"), "server-µs/release")
			left, _ := srv.DoInt(ctx, "DBSIZE")
			b.ReportMetric(float64(left)/float64(b.N), "keys-left/release")
			mem1 := infoInt(b, srv, "memory", "used_memory")
			b.ReportMetric(float64(mem1-mem0)/float64(b.N), "server-B/release")
		})
	}
}

func infoInt(tb testing.TB, srv *redistest.Server, section, field string) int64 {
	m, err := srv.Info(context.Background(), section)
	if err != nil {
		tb.Fatal(err)
	}
	n, err := strconv.ParseInt(m[field], 10, 64)
	if err != nil {
		tb.Fatalf("INFO %s %s = %q", section, field, m[field])
	}
	return n
}

// plainEval returns the arguments of an EVALSHA of the plain-lock script with SHA-1 sha on the keys of the lock
// name (plainKeysOf), followed by args.
func plainEval(sha, name string, args ...string) []string {
	cmd := append([]string{"EVALSHA", sha, strconv.Itoa(numPlainKeys)}, plainKeysOf(name)...)
	return append(cmd, args...)
}

// loadScripts loads every source into the server's script cache, so that the benchmarks' EVALSHAs run.
func loadScripts(tb testing.TB, srv *redistest.Server, srcs ...string) {
	for _, src := range srcs {
		if _, err := srv.Do(context.Background(), "SCRIPT", "LOAD", src); err != nil {
			tb.Fatal(err)
		}
	}
}

// resetStats zeroes the server's command statistics (CONFIG RESETSTAT), so that a timed loop's are read alone.
func resetStats(tb testing.TB, srv *redistest.Server) {
	if _, err := srv.Do(context.Background(), "CONFIG", "RESETSTAT"); err != nil {
		tb.Fatal(err)
	}
}

// scriptStats reads INFO commandstats after a timed loop and fails tb unless the server ran exactly want scripts
// (EVALSHA) since resetStats: a benchmark that times other work than it means to reports nothing.
func scriptStats(tb testing.TB, srv *redistest.Server, want int) map[string]string {
	st := commandStats(tb, srv)
	if calls := statField(tb, st["cmdstat_evalsha"], "calls"); calls != float64(want) {
		tb.Fatalf("the server ran %v scripts, want %d", calls, want)
	}
	return st
}

// commandStats reads INFO commandstats: one line per command, read with statField.
func commandStats(tb testing.TB, srv *redistest.Server) map[string]string {
	st, err := srv.Info(context.Background(), "commandstats")
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// statField reads one field of a commandstats line "calls=..,usec=..,usec_per_call=..,...".
func statField(tb testing.TB, line, field string) float64 {
	for _, kv := range strings.Split(line, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == field {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return f
		}
	}
	tb.Fatalf("no %s in %q", field, line)
	return 0
}

package resp

import (
	"errors"
	"flag"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// captureDir, when set, makes TestDecodeRealReplies write every frame it received from redis-server as a seed of
// FuzzDecode: go test ./resp -run '^TestDecodeRealReplies$' -resp.capture=testdata/fuzz/FuzzDecode
var captureDir = flag.String("resp.capture", "", "directory to write captured redis-server replies to, as FuzzDecode seeds")

// rawConn is a bare TCP connection to redis-server that sends commands with this package's encoder and keeps the
// exact bytes of each reply frame it decodes.
type rawConn struct {
	t   *testing.T
	c   net.Conn
	dec Decoder
	buf []byte
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c}
}

func (r *rawConn) send(args ...string) {
	r.t.Helper()
	if _, err := r.c.Write(AppendCommand(nil, args...)); err != nil {
		r.t.Fatalf("writing %q: %v", args, err)
	}
}

// next returns the next reply frame, reading as much as it needs; the deadline only bounds a broken test.
func (r *rawConn) next() (Value, []byte) {
	r.t.Helper()
	chunk := make([]byte, 4096)
	for {
		v, n, err := r.dec.Decode(r.buf)
		if err == nil {
			raw := append([]byte(nil), r.buf[:n]...)
			r.buf = r.buf[n:]
			return v, raw
		}
		if !errors.Is(err, ErrIncomplete) {
			r.t.Fatalf("decoding %q: %v", r.buf, err)
		}
		if n != 0 {
			r.t.Fatalf("ErrIncomplete with n = %d", n)
		}
		if err := r.c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			r.t.Fatal(err)
		}
		k, err := r.c.Read(chunk)
		if err != nil {
			r.t.Fatalf("reading a reply: %v", err)
		}
		r.buf = append(r.buf, chunk[:k]...)
	}
}

// do sends one command and returns its reply and the reply's bytes.
func (r *rawConn) do(args ...string) (Value, []byte) {
	r.t.Helper()
	r.send(args...)
	return r.next()
}

// Lock-shaped scripts, in the manner of Redisson's: acquire returns nil when taken and the PTTL otherwise.
const (
	acquireScript = `if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then ` +
		`redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; ` +
		`return redis.call('pttl', KEYS[1]);`
	arrayScript = `return {1, 'two', {3, false}, redis.call('hget', KEYS[1], ARGV[1])}`
)

func TestDecodeRealReplies(t *testing.T) {
	srv := redistest.Start(t)
	c := dialRaw(t, srv.Addr())
	captured := map[string][]byte{}
	expect := func(name string, got Value, raw []byte, want Value) {
		t.Helper()
		captured[name] = raw
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded %q as %v, want %v", name, raw, got, want)
		}
	}
	expectErr := func(name string, got Value, raw []byte, prefix string) {
		t.Helper()
		captured[name] = raw
		var se *ServerError
		if !errors.As(got.Err(), &se) || se.Prefix != prefix || !strings.HasPrefix(string(raw), "-"+prefix+" ") {
			t.Errorf("%s: decoded %q as %v, want a %s error reply", name, raw, got, prefix)
		}
	}

	v, raw := c.do("PING")
	expect("ping", v, raw, simple("PONG"))
	v, raw = c.do("SCRIPT", "LOAD", acquireScript)
	captured["script-load"] = raw
	acquireSHA, err := v.AsString()
	if err != nil || len(acquireSHA) != 40 {
		t.Fatalf("SCRIPT LOAD replied %v, %v", v, err)
	}
	const lock, owner, other = "{my-lock}", "1b1b8f7c-3c1e-4c5b-9a57-0e4c2f4b7d10:1", "0c0c-other:7"
	v, raw = c.do("EVALSHA", acquireSHA, "1", lock, "30000", owner)
	expect("evalsha-nil", v, raw, nullBulk)
	v, raw = c.do("EVALSHA", acquireSHA, "1", lock, "30000", other)
	captured["evalsha-integer"] = raw
	if v.Type != Integer || v.Int <= 0 || v.Int > 30000 {
		t.Errorf("contended acquire: decoded %q as %v, want the lock's PTTL", raw, v)
	}
	v, raw = c.do("EVAL", arrayScript, "1", lock, owner)
	expect("eval-array", v, raw, arr(integer(1), bulk("two"), arr(integer(3), nullBulk), bulk("1")))
	v, _ = c.do("SCRIPT", "LOAD", arrayScript)
	arraySHA, _ := v.AsString()
	v, raw = c.do("EVALSHA", arraySHA, "1", lock, owner)
	expect("evalsha-array", v, raw, arr(integer(1), bulk("two"), arr(integer(3), nullBulk), bulk("1")))

	v, raw = c.do("HSET", lock, "mode", "write")
	expect("hset", v, raw, integer(1))
	v, raw = c.do("HGETALL", lock)
	expect("hgetall", v, raw, arr(bulk(owner), bulk("1"), bulk("mode"), bulk("write")))
	v, raw = c.do("HGETALL", "missing")
	expect("hgetall-empty", v, raw, arr())
	v, raw = c.do("GET", "missing")
	expect("get-nil", v, raw, nullBulk)
	v, raw = c.do("BLPOP", "missing-list", "0.01")
	expect("blpop-timeout-null-array", v, raw, nullArray)

	v, raw = c.do("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0")
	expectErr("noscript", v, raw, "NOSCRIPT")
	v, raw = c.do("LPUSH", lock, "x")
	expectErr("wrongtype", v, raw, "WRONGTYPE")
	v, raw = c.do("NOSUCHCOMMAND")
	expectErr("err-unknown-command", v, raw, "ERR")
	v, raw = c.do("EVAL", "return redis.error_reply('BUSYKEY custom')", "0")
	expectErr("script-error-reply", v, raw, "BUSYKEY")

	v, raw = c.do("MULTI")
	expect("multi", v, raw, simple("OK"))
	v, raw = c.do("INCR", "counter")
	expect("queued", v, raw, simple("QUEUED"))
	v, raw = c.do("EXEC")
	expect("exec", v, raw, arr(integer(1)))

	big := strings.Repeat("0123456789abcdef", 16<<10) // 256 KiB: arrives over many reads
	v, raw = c.do("SET", "big", big)
	expect("set", v, raw, simple("OK"))
	v, raw = c.do("GET", "big")
	if !reflect.DeepEqual(v, bulk(big)) {
		t.Errorf("GET big: decoded a %d-byte frame as %v of %d bytes", len(raw), v.Type, len(v.Str))
	}

	// Pub/sub, on a connection of its own. Each confirmation is awaited before publishing.
	sub := dialRaw(t, srv.Addr())
	channel := "redisson_lock__channel:" + lock
	v, raw = sub.do("SUBSCRIBE", channel)
	expect("subscribe", v, raw, arr(bulk("subscribe"), bulk(channel), integer(1)))
	v, raw = sub.do("PSUBSCRIBE", "redisson_lock__channel:*")
	expect("psubscribe", v, raw, arr(bulk("psubscribe"), bulk("redisson_lock__channel:*"), integer(2)))
	v, raw = c.do("PUBLISH", channel, "0")
	expect("publish", v, raw, integer(2))
	v, raw = sub.next()
	expect("pubsub-message", v, raw, arr(bulk("message"), bulk(channel), bulk("0")))
	v, raw = sub.next()
	expect("pubsub-pmessage", v, raw, arr(bulk("pmessage"), bulk("redisson_lock__channel:*"), bulk(channel), bulk("0")))
	v, raw = sub.do("PING")
	expect("pubsub-ping", v, raw, arr(bulk("pong"), bulk("")))

	// Every captured frame, re-fed from scratch: each proper prefix is incomplete, and all of them back to back
	// decode in order.
	var stream []byte
	var names []string
	for name, raw := range captured {
		for k := 0; k < len(raw); k++ {
			if _, n, err := c.dec.Decode(raw[:k]); !errors.Is(err, ErrIncomplete) || n != 0 {
				t.Fatalf("%s: prefix %q gave %d, %v", name, raw[:k], n, err)
			}
		}
		stream = append(stream, raw...)
		names = append(names, name)
	}
	for _, name := range names {
		v, n, err := c.dec.Decode(stream)
		if err != nil || n != len(captured[name]) {
			t.Fatalf("%s in a stream: %v, %d, %v", name, v, n, err)
		}
		stream = stream[n:]
	}
	if *captureDir != "" {
		writeSeeds(t, *captureDir, captured)
	}
}

// TestDecodePipelinedRealReplies sends many commands in one write and decodes the replies in order as the reads
// split them.
func TestDecodePipelinedRealReplies(t *testing.T) {
	srv := redistest.Start(t)
	c := dialRaw(t, srv.Addr())
	const n = 2000
	var out []byte
	for i := 0; i < n; i++ {
		out = AppendCommand(out, "INCR", "pipelined")
		out = AppendCommand(out, "GET", "pipelined")
	}
	if _, err := c.c.Write(out); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if v, raw := c.next(); !reflect.DeepEqual(v, integer(int64(i))) {
			t.Fatalf("INCR %d: decoded %q as %v", i, raw, v)
		}
		if v, raw := c.next(); !reflect.DeepEqual(v, bulk(strconv.Itoa(i))) {
			t.Fatalf("GET %d: decoded %q as %v", i, raw, v)
		}
	}
}

func writeSeeds(t *testing.T, dir string, frames map[string][]byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, raw := range frames {
		if len(raw) > 4096 {
			continue // the fuzzer mutates small inputs best
		}
		body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(raw)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, "redis-7-"+name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

package rlock

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// The scripts are tested on their own against a real redis-server, through the test harness's admin client and
// EVALSHA, so that what they do to the keyspace is checked independently of the client that sends them. The
// helpers here serve every *_scripts_test.go.

const (
	ownerA = "8f14e45f-ceea-467f-a0e6-1f9ac4a1d9b1:1" // Redisson layout: <clientUUID>:<threadId>
	ownerB = "8f14e45f-ceea-467f-a0e6-1f9ac4a1d9b1:2"
	ownerC = "c9f0f895-fb98-4b91-9d3b-2c1a6e8e7a10:7"
	ownerD = "c9f0f895-fb98-4b91-9d3b-2c1a6e8e7a10:10"
)

// scriptServer is a redis-server for script tests.
type scriptServer struct {
	t   *testing.T
	srv *redistest.Server
}

func newScriptServer(t *testing.T) *scriptServer {
	t.Helper()
	return &scriptServer{t: t, srv: redistest.Start(t)}
}

// eval loads sc's source (checking that the server's SHA-1 is the one computed locally, as conn sends it), runs
// it with EVALSHA and fails the test on a transport error; a script's error reply is returned as a KindError
// reply. A script that publishes is given PUBLISH as its last argument, as the client gives it on a standalone
// server (scripts.Publishes): the tests pass the arguments each script documents.
func (s *scriptServer) eval(sc scripts.Script, keys []string, args ...string) redistest.Reply {
	s.t.Helper()
	src := sc.Source
	if scripts.Publishes(src) {
		args = append(args[:len(args):len(args)], "publish")
	}
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	if got := s.str("SCRIPT", "LOAD", src); got != sha {
		s.t.Fatalf("server SHA %s, local SHA %s", got, sha)
	}
	cmd := append([]string{"EVALSHA", sha, strconv.Itoa(len(keys))}, keys...)
	r, err := s.srv.Do(context.Background(), append(cmd, args...)...)
	var re *redistest.ReplyError
	if errors.As(err, &re) {
		return redistest.Reply{Kind: redistest.KindError, Str: re.Message}
	}
	if err != nil {
		s.t.Fatalf("EVAL: %v", err)
	}
	return r
}

func (s *scriptServer) do(args ...string) redistest.Reply {
	s.t.Helper()
	r, err := s.srv.Do(context.Background(), args...)
	if err != nil {
		s.t.Fatalf("%v: %v", args, err)
	}
	return r
}

func (s *scriptServer) int(args ...string) int64 {
	s.t.Helper()
	n, err := s.srv.DoInt(context.Background(), args...)
	if err != nil {
		s.t.Fatalf("%v: %v", args, err)
	}
	return n
}

func (s *scriptServer) str(args ...string) string {
	s.t.Helper()
	r := s.do(args...)
	return r.Str
}

func (s *scriptServer) strs(args ...string) []string {
	s.t.Helper()
	v, err := s.srv.DoStrings(context.Background(), args...)
	if err != nil {
		s.t.Fatalf("%v: %v", args, err)
	}
	return v
}

func (s *scriptServer) hash(key string) map[string]string {
	s.t.Helper()
	m, err := s.srv.DoMap(context.Background(), "HGETALL", key)
	if err != nil {
		s.t.Fatalf("HGETALL %s: %v", key, err)
	}
	return m
}

// millis returns the server's clock in Unix milliseconds.
func (s *scriptServer) millis() int64 {
	s.t.Helper()
	v := s.strs("TIME")
	sec, _ := strconv.ParseInt(v[0], 10, 64)
	us, _ := strconv.ParseInt(v[1], 10, 64)
	return sec*1000 + us/1000
}

func (s *scriptServer) score(key, member string) int64 {
	s.t.Helper()
	r := s.do("ZSCORE", key, member)
	if r.Kind == redistest.KindNil {
		return -1
	}
	f, err := strconv.ParseFloat(r.Str, 64)
	if err != nil {
		s.t.Fatalf("ZSCORE %s %s = %s", key, member, r)
	}
	return int64(f)
}

func wantReply(t *testing.T, what string, r redistest.Reply, kind redistest.Kind, v string) {
	t.Helper()
	got := r.Str
	if r.Kind == redistest.KindInt {
		got = strconv.FormatInt(r.Int, 10)
	}
	if r.Kind != kind || (v != "*" && got != v) {
		t.Fatalf("%s: reply %s, want kind %d %q", what, r, kind, v)
	}
}

func wantBulk(t *testing.T, what string, r redistest.Reply, v string) {
	t.Helper()
	wantReply(t, what, r, redistest.KindBulk, v)
}

func wantInt(t *testing.T, what string, r redistest.Reply, v int64) {
	t.Helper()
	wantReply(t, what, r, redistest.KindInt, strconv.FormatInt(v, 10))
}

// wantIntIn checks an integer reply within [lo, hi].
func wantIntIn(t *testing.T, what string, r redistest.Reply, lo, hi int64) {
	t.Helper()
	if r.Kind != redistest.KindInt || r.Int < lo || r.Int > hi {
		t.Fatalf("%s: reply %s, want an integer in [%d, %d]", what, r, lo, hi)
	}
}

func wantNil(t *testing.T, what string, r redistest.Reply) {
	t.Helper()
	if r.Kind != redistest.KindNil {
		t.Fatalf("%s: reply %s, want nil", what, r)
	}
}

// subscription is a raw subscription on its own connection to one or more channels.
type subscription struct {
	t   *testing.T
	s   *scriptServer
	c   net.Conn
	dec resp.Decoder
	buf []byte
}

func (s *scriptServer) subscribe(channels ...string) *subscription {
	s.t.Helper()
	c, err := net.Dial("tcp", s.srv.Addr())
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.Close() })
	sub := &subscription{t: s.t, s: s, c: c}
	if _, err := c.Write(resp.AppendCommand(nil, append([]string{"SUBSCRIBE"}, channels...)...)); err != nil {
		s.t.Fatal(err)
	}
	for range channels {
		if v := sub.next(time.Second); len(v.Elems) != 3 || v.Elems[0].Str != "subscribe" {
			s.t.Fatalf("subscribe confirmation %s", v)
		}
	}
	return sub
}

func (f *subscription) next(d time.Duration) resp.Value {
	f.t.Helper()
	if err := f.c.SetReadDeadline(time.Now().Add(d)); err != nil {
		f.t.Fatal(err)
	}
	tmp := make([]byte, 4096)
	for {
		v, n, err := f.dec.Decode(f.buf)
		if err == nil {
			f.buf = f.buf[n:]
			return v
		}
		if !errors.Is(err, resp.ErrIncomplete) {
			f.t.Fatal(err)
		}
		k, err := f.c.Read(tmp)
		if err != nil {
			f.t.Fatalf("reading from the subscription: %v", err)
		}
		f.buf = append(f.buf, tmp[:k]...)
	}
}

// message returns the channel and payload of the next message.
func (f *subscription) message() (channel, payload string) {
	f.t.Helper()
	v := f.next(2 * time.Second)
	if len(v.Elems) != 3 || v.Elems[0].Str != "message" {
		f.t.Fatalf("want a message, got %s", v)
	}
	return v.Elems[1].Str, v.Elems[2].Str
}

// wantPTTL checks that key's PTTL is in (lease-2s, lease].
func (s *scriptServer) wantPTTL(key string, lease time.Duration) {
	s.t.Helper()
	ttl := s.int("PTTL", key)
	if ttl > lease.Milliseconds() || ttl < (lease-2*time.Second).Milliseconds() {
		s.t.Fatalf("PTTL of %s %d ms, want about %d ms", key, ttl, lease.Milliseconds())
	}
}

// want checks that the next message is payload on channel.
func (f *subscription) want(channel, payload string) {
	f.t.Helper()
	ch, p := f.message()
	if ch != channel || p != payload {
		f.t.Fatalf("message %q on %q, want %q on %q", p, ch, payload, channel)
	}
}

// quiet checks that nothing was published on channel since the last message read: it publishes a marker there
// and expects it next.
func (f *subscription) quiet(channel string) {
	f.t.Helper()
	f.s.int("PUBLISH", channel, "marker")
	f.want(channel, "marker")
}

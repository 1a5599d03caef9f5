package rlock

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// The family's scripts are tested on their own against a real redis-server, through the test harness's admin
// client and EVAL, so that what they write is checked independently of the client that sends them. The helpers
// here serve every *_scripts_test.go of the family.

const (
	famOwnerA = "3d9f2c4e-1b7a-4c55-9e2f-6a0b8c1d2e3f:1" // Redisson layout: <clientUUID>:<threadId>
	famOwnerB = "3d9f2c4e-1b7a-4c55-9e2f-6a0b8c1d2e3f:2"
	famOwnerC = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d:9"
	famOwnerD = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d:10"
)

// famSrv is a redis-server for script tests.
type famSrv struct {
	t   *testing.T
	srv *redistest.Server
}

func newFamSrv(t *testing.T) *famSrv {
	t.Helper()
	return &famSrv{t: t, srv: redistest.Start(t)}
}

// eval runs src with EVAL and fails the test on a transport error (a script error reply is returned).
func (s *famSrv) eval(src string, keys []string, args ...string) redistest.Reply {
	s.t.Helper()
	cmd := append([]string{"EVAL", src, strconv.Itoa(len(keys))}, keys...)
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

func (s *famSrv) do(args ...string) redistest.Reply {
	s.t.Helper()
	r, err := s.srv.Do(context.Background(), args...)
	if err != nil {
		s.t.Fatalf("%v: %v", args, err)
	}
	return r
}

func (s *famSrv) int(args ...string) int64 {
	s.t.Helper()
	n, err := s.srv.DoInt(context.Background(), args...)
	if err != nil {
		s.t.Fatalf("%v: %v", args, err)
	}
	return n
}

func (s *famSrv) str(args ...string) string {
	s.t.Helper()
	r := s.do(args...)
	return r.Str
}

func (s *famSrv) strs(args ...string) []string {
	s.t.Helper()
	v, err := s.srv.DoStrings(context.Background(), args...)
	if err != nil {
		s.t.Fatalf("%v: %v", args, err)
	}
	return v
}

func (s *famSrv) hash(key string) map[string]string {
	s.t.Helper()
	m, err := s.srv.DoMap(context.Background(), "HGETALL", key)
	if err != nil {
		s.t.Fatalf("HGETALL %s: %v", key, err)
	}
	return m
}

// millis returns the server's clock in Unix milliseconds.
func (s *famSrv) millis() int64 {
	s.t.Helper()
	v := s.strs("TIME")
	sec, _ := strconv.ParseInt(v[0], 10, 64)
	us, _ := strconv.ParseInt(v[1], 10, 64)
	return sec*1000 + us/1000
}

func (s *famSrv) score(key, member string) int64 {
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

func wantBulkReply(t *testing.T, what string, r redistest.Reply, v string) {
	t.Helper()
	wantReply(t, what, r, redistest.KindBulk, v)
}

func wantIntReply(t *testing.T, what string, r redistest.Reply, v int64) {
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

func wantNilReply(t *testing.T, what string, r redistest.Reply) {
	t.Helper()
	if r.Kind != redistest.KindNil {
		t.Fatalf("%s: reply %s, want nil", what, r)
	}
}

// famSub is a raw subscription on its own connection to one or more channels.
type famSub struct {
	t   *testing.T
	s   *famSrv
	c   net.Conn
	dec resp.Decoder
	buf []byte
}

func (s *famSrv) subscribe(channels ...string) *famSub {
	s.t.Helper()
	c, err := net.Dial("tcp", s.srv.Addr())
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.Close() })
	sub := &famSub{t: s.t, s: s, c: c}
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

func (f *famSub) next(d time.Duration) resp.Value {
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
func (f *famSub) message() (channel, payload string) {
	f.t.Helper()
	v := f.next(2 * time.Second)
	if len(v.Elems) != 3 || v.Elems[0].Str != "message" {
		f.t.Fatalf("want a message, got %s", v)
	}
	return v.Elems[1].Str, v.Elems[2].Str
}

// want checks that the next message is payload on channel.
func (f *famSub) want(channel, payload string) {
	f.t.Helper()
	ch, p := f.message()
	if ch != channel || p != payload {
		f.t.Fatalf("message %q on %q, want %q on %q", p, ch, payload, channel)
	}
}

// quiet checks that nothing was published on channel since the last message read: it publishes a marker there
// and expects it next.
func (f *famSub) quiet(channel string) {
	f.t.Helper()
	f.s.int("PUBLISH", channel, "marker")
	f.want(channel, "marker")
}

func TestFencedAcquireScriptIncrementsTheTokenOnEveryGrant(t *testing.T) {
	s := newFamSrv(t)
	keys := []string{"fenced", "redisson_lock_token:{fenced}"}
	for i := 1; i <= 3; i++ {
		r := s.eval(fencedAcquireSrc, keys, "5000", famOwnerA)
		if r.Kind != redistest.KindArray || len(r.Array) != 2 || r.Array[0].Int != int64(i) || r.Array[1].Int != int64(i) {
			t.Fatalf("grant %d: reply %s, want [count %d, token %d]", i, r, i, i)
		}
	}
	if got := s.hash("fenced"); got[famOwnerA] != "3" || len(got) != 1 {
		t.Fatalf("lock hash %v", got)
	}
	// Another owner is refused with the PTTL, and the token does not move.
	wantIntIn(t, "refused", s.eval(fencedAcquireSrc, keys, "5000", famOwnerB), 1, 5000)
	if n := s.int("GET", keys[1]); n != 3 {
		t.Fatalf("token after a refusal = %d, want 3", n)
	}
	// The lease is applied on every grant, re-entry included.
	s.eval(fencedAcquireSrc, keys, "200000", famOwnerA)
	if p := s.int("PTTL", "fenced"); p < 199000 {
		t.Fatalf("PTTL after a re-entry with a 200 s lease = %d", p)
	}
	// Released by the plain release, the next owner gets the next token.
	for range 4 {
		s.eval(releaseSrc, []string{"fenced", "redisson_lock__channel:{fenced}"}, famOwnerA, "0", "5000", "0")
	}
	if s.int("EXISTS", "fenced") != 0 {
		t.Fatal("lock still exists after four releases")
	}
	r := s.eval(fencedAcquireSrc, keys, "5000", famOwnerB)
	if r.Kind != redistest.KindArray || r.Array[1].Int != 5 {
		t.Fatalf("next owner's grant %s, want token 5", r)
	}
}

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
)

// The scripts are tested on their own against a real redis-server, through the test harness's admin client and
// EVALSHA, so that what they do to the keyspace is checked independently of the client that sends them.

const (
	ownerA = "8f14e45f-ceea-467f-a0e6-1f9ac4a1d9b1:1" // Redisson layout: <clientUUID>:<threadId>
	ownerB = "8f14e45f-ceea-467f-a0e6-1f9ac4a1d9b1:2"
	ownerC = "c9f0f895-fb98-4b91-9d3b-2c1a6e8e7a10:7"
)

// evalSHA loads src (checking that the server's SHA-1 is the one computed locally, as conn does) and runs it.
func evalSHA(t *testing.T, srv *redistest.Server, src string, keys []string, args ...string) redistest.Reply {
	t.Helper()
	ctx := context.Background()
	sum := sha1.Sum([]byte(src))
	want := hex.EncodeToString(sum[:])
	got, err := srv.DoString(ctx, "SCRIPT", "LOAD", src)
	if err != nil {
		t.Fatalf("SCRIPT LOAD: %v", err)
	}
	if got != want {
		t.Fatalf("server SHA %s, local SHA %s", got, want)
	}
	cmd := append([]string{"EVALSHA", want, strconv.Itoa(len(keys))}, keys...)
	r, err := srv.Do(ctx, append(cmd, args...)...)
	if err != nil {
		t.Fatalf("EVALSHA: %v", err)
	}
	return r
}

func acquireRaw(t *testing.T, srv *redistest.Server, name, owner string, lease time.Duration) redistest.Reply {
	t.Helper()
	return evalSHA(t, srv, acquireSrc, []string{name}, strconv.FormatInt(lease.Milliseconds(), 10), owner)
}

func releaseRaw(t *testing.T, srv *redistest.Server, name, owner string, expect int, lease time.Duration) redistest.Reply {
	t.Helper()
	return evalSHA(t, srv, releaseSrc, []string{name, channelName(name)},
		owner, strconv.Itoa(expect), strconv.FormatInt(lease.Milliseconds(), 10), unlockMessage)
}

func handoffRaw(t *testing.T, srv *redistest.Server, name, owner string, expect int, next string, lease time.Duration) redistest.Reply {
	t.Helper()
	ms := strconv.FormatInt(lease.Milliseconds(), 10)
	return evalSHA(t, srv, handoffSrc, []string{name, channelName(name)},
		owner, strconv.Itoa(expect), ms, unlockMessage, next, ms)
}

func mustMap(t *testing.T, srv *redistest.Server, args ...string) map[string]string {
	t.Helper()
	m, err := srv.DoMap(context.Background(), args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return m
}

func mustInt(t *testing.T, srv *redistest.Server, args ...string) int64 {
	t.Helper()
	n, err := srv.DoInt(context.Background(), args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return n
}

// wantBulk and wantInt check one reply's RESP type and value.
func wantBulk(t *testing.T, r redistest.Reply, want string) {
	t.Helper()
	if r.Kind != redistest.KindBulk || r.Str != want {
		t.Fatalf("reply %s, want bulk %q", r, want)
	}
}

func wantInt(t *testing.T, r redistest.Reply, want int64) {
	t.Helper()
	if r.Kind != redistest.KindInt || r.Int != want {
		t.Fatalf("reply %s, want integer %d", r, want)
	}
}

func wantNil(t *testing.T, r redistest.Reply) {
	t.Helper()
	if r.Kind != redistest.KindNil {
		t.Fatalf("reply %s, want nil", r)
	}
}

// wantPTTL checks that the lock's PTTL is in (lease-slack, lease].
func wantPTTL(t *testing.T, srv *redistest.Server, name string, lease time.Duration) {
	t.Helper()
	ttl := mustInt(t, srv, "PTTL", name)
	if ttl > lease.Milliseconds() || ttl < (lease-2*time.Second).Milliseconds() {
		t.Fatalf("PTTL %d ms, want about %d ms", ttl, lease.Milliseconds())
	}
}

// subscriber is a raw RESP2 connection subscribed to one channel, to see exactly what the scripts publish.
type subscriber struct {
	c   net.Conn
	dec resp.Decoder
	buf []byte
}

func subscribe(t *testing.T, srv *redistest.Server, channel string) *subscriber {
	t.Helper()
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := &subscriber{c: c}
	if _, err := c.Write(resp.AppendCommand(nil, "SUBSCRIBE", channel)); err != nil {
		t.Fatal(err)
	}
	if v := s.next(t, time.Second); len(v.Elems) != 3 || v.Elems[0].Str != "subscribe" {
		t.Fatalf("subscribe confirmation %s", v)
	}
	return s
}

// next reads the next frame, failing the test if none comes within d.
func (s *subscriber) next(t *testing.T, d time.Duration) resp.Value {
	t.Helper()
	if err := s.c.SetReadDeadline(time.Now().Add(d)); err != nil {
		t.Fatal(err)
	}
	tmp := make([]byte, 4096)
	for {
		v, n, err := s.dec.Decode(s.buf)
		if err == nil {
			s.buf = s.buf[n:]
			return v
		}
		if !errors.Is(err, resp.ErrIncomplete) {
			t.Fatal(err)
		}
		k, err := s.c.Read(tmp)
		if err != nil {
			t.Fatalf("reading from the subscription: %v", err)
		}
		s.buf = append(s.buf, tmp[:k]...)
	}
}

// message returns the payload of the next published message.
func (s *subscriber) message(t *testing.T) string {
	t.Helper()
	v := s.next(t, 2*time.Second)
	if len(v.Elems) != 3 || v.Elems[0].Str != "message" {
		t.Fatalf("want a message, got %s", v)
	}
	return v.Elems[2].Str
}

// marker publishes a marker on the channel; the next message the subscriber reads is then the marker exactly
// when the script under test published nothing.
func marker(t *testing.T, srv *redistest.Server, s *subscriber, channel string) {
	t.Helper()
	mustInt(t, srv, "PUBLISH", channel, "marker")
	if got := s.message(t); got != "marker" {
		t.Fatalf("the script published %q", got)
	}
}

func TestAcquireScriptCreatesReentersAndRefuses(t *testing.T) {
	srv := redistest.Start(t)
	const lease = 30 * time.Second

	wantBulk(t, acquireRaw(t, srv, "lock", ownerA, lease), "1")
	if m := mustMap(t, srv, "HGETALL", "lock"); len(m) != 1 || m[ownerA] != "1" {
		t.Fatalf("HGETALL %v, want {%s: 1}", m, ownerA)
	}
	wantPTTL(t, srv, "lock", lease)

	wantBulk(t, acquireRaw(t, srv, "lock", ownerA, 10*time.Second), "2")
	wantPTTL(t, srv, "lock", 10*time.Second) // re-entry re-arms the lease it is given

	r := acquireRaw(t, srv, "lock", ownerB, lease)
	if r.Kind != redistest.KindInt || r.Int <= 0 || r.Int > 10000 {
		t.Fatalf("refused acquire replied %s, want the PTTL", r)
	}
	if m := mustMap(t, srv, "HGETALL", "lock"); len(m) != 1 || m[ownerA] != "2" {
		t.Fatalf("a refused acquire changed the lock: %v", m)
	}

	// A key without expiry (not written by a lock client) is reported as PTTL -1, never taken.
	if _, err := srv.Do(context.Background(), "HSET", "plain", ownerC, "1"); err != nil {
		t.Fatal(err)
	}
	wantInt(t, acquireRaw(t, srv, "plain", ownerA, lease), -1)
}

func TestReleaseScriptDecrementsThenDeletesAndPublishes(t *testing.T) {
	srv := redistest.Start(t)
	sub := subscribe(t, srv, channelName("lock"))
	const lease = 30 * time.Second

	wantNil(t, releaseRaw(t, srv, "lock", ownerA, 0, lease)) // nobody holds it

	acquireRaw(t, srv, "lock", ownerA, lease)
	acquireRaw(t, srv, "lock", ownerA, lease)
	wantNil(t, releaseRaw(t, srv, "lock", ownerB, 0, lease)) // not the owner: untouched
	if m := mustMap(t, srv, "HGETALL", "lock"); m[ownerA] != "2" {
		t.Fatalf("release by another owner changed the lock: %v", m)
	}

	mustInt(t, srv, "PEXPIRE", "lock", "5000")
	wantInt(t, releaseRaw(t, srv, "lock", ownerA, 2, lease), 0)
	if m := mustMap(t, srv, "HGETALL", "lock"); m[ownerA] != "1" {
		t.Fatalf("after one release: %v", m)
	}
	wantPTTL(t, srv, "lock", lease) // a partial release re-arms the lease
	marker(t, srv, sub, channelName("lock"))

	wantInt(t, releaseRaw(t, srv, "lock", ownerA, 1, lease), 1)
	if n := mustInt(t, srv, "EXISTS", "lock"); n != 0 {
		t.Fatal("the last release left the lock")
	}
	if got := sub.message(t); got != unlockMessage {
		t.Fatalf("published %q, want %q", got, unlockMessage)
	}
}

// A retried release (the first attempt ran but its reply was lost) must never release a second hold.
func TestReleaseScriptRetryNeverDecrementsTwice(t *testing.T) {
	srv := redistest.Start(t)
	const lease = 30 * time.Second
	for i := 0; i < 3; i++ {
		acquireRaw(t, srv, "lock", ownerA, lease)
	}

	wantInt(t, releaseRaw(t, srv, "lock", ownerA, 3, lease), 0)  // the attempt that ran
	wantInt(t, releaseRaw(t, srv, "lock", ownerA, 3, lease), -2) // its retry: count moved on, nothing done
	if m := mustMap(t, srv, "HGETALL", "lock"); m[ownerA] != "2" {
		t.Fatalf("retry decremented again: %v", m)
	}

	wantInt(t, releaseRaw(t, srv, "lock", ownerA, 2, lease), 0)
	wantInt(t, releaseRaw(t, srv, "lock", ownerA, 1, lease), 1)
	wantNil(t, releaseRaw(t, srv, "lock", ownerA, 1, lease)) // retry of the last one: gone, nothing done
	wantNil(t, releaseRaw(t, srv, "lock", ownerA, 0, lease))
}

func TestHandoffScriptPassesTheLockWithoutFreeingIt(t *testing.T) {
	srv := redistest.Start(t)
	sub := subscribe(t, srv, channelName("lock"))
	const lease = 30 * time.Second
	acquireRaw(t, srv, "lock", ownerA, lease)
	mustInt(t, srv, "PEXPIRE", "lock", "5000")

	r := handoffRaw(t, srv, "lock", ownerA, 1, ownerB, lease)
	if len(r.Array) != 2 || r.Array[0].Kind != redistest.KindInt || r.Array[0].Int != 1 || r.Array[1].Str != "1" {
		t.Fatalf("hand-off replied %s, want [1, \"1\"]", r)
	}
	if m := mustMap(t, srv, "HGETALL", "lock"); len(m) != 1 || m[ownerB] != "1" {
		t.Fatalf("after hand-off: %v, want {%s: 1}", m, ownerB)
	}
	wantPTTL(t, srv, "lock", lease)
	marker(t, srv, sub, channelName("lock")) // nothing published: the lock was never free

	// Retried after an ambiguous failure: A holds nothing, B already holds: B is not counted twice.
	r = handoffRaw(t, srv, "lock", ownerA, 1, ownerB, lease)
	if len(r.Array) != 2 || r.Array[0].Kind != redistest.KindNil || r.Array[1].Str != "1" {
		t.Fatalf("retried hand-off replied %s, want [nil, \"1\"]", r)
	}
	if m := mustMap(t, srv, "HGETALL", "lock"); m[ownerB] != "1" {
		t.Fatalf("retried hand-off counted B twice: %v", m)
	}
}

func TestHandoffScriptKeepsAReenteredLockAndRespectsOthers(t *testing.T) {
	srv := redistest.Start(t)
	const lease = 30 * time.Second

	// A holds twice: the hand-off only releases one hold and grants nothing.
	acquireRaw(t, srv, "lock", ownerA, lease)
	acquireRaw(t, srv, "lock", ownerA, lease)
	r := handoffRaw(t, srv, "lock", ownerA, 2, ownerB, lease)
	if len(r.Array) != 2 || r.Array[0].Int != 0 || r.Array[1].Kind != redistest.KindNil {
		t.Fatalf("hand-off of a re-entered lock replied %s, want [0, nil]", r)
	}
	if m := mustMap(t, srv, "HGETALL", "lock"); len(m) != 1 || m[ownerA] != "1" {
		t.Fatalf("after partial hand-off: %v", m)
	}

	// Expected count mismatch: nothing happens.
	r = handoffRaw(t, srv, "lock", ownerA, 5, ownerB, lease)
	if len(r.Array) != 2 || r.Array[0].Int != -1 || r.Array[1].Kind != redistest.KindNil {
		t.Fatalf("mismatched hand-off replied %s, want [-1, nil]", r)
	}

	// A lost the lock to C: nothing released, B not granted, C's PTTL reported.
	if _, err := srv.Do(context.Background(), "DEL", "lock"); err != nil {
		t.Fatal(err)
	}
	acquireRaw(t, srv, "lock", ownerC, lease)
	r = handoffRaw(t, srv, "lock", ownerA, 1, ownerB, lease)
	if len(r.Array) != 2 || r.Array[0].Kind != redistest.KindNil || r.Array[1].Kind != redistest.KindInt || r.Array[1].Int <= 0 {
		t.Fatalf("hand-off of a lost lock replied %s, want [nil, PTTL]", r)
	}
	if m := mustMap(t, srv, "HGETALL", "lock"); len(m) != 1 || m[ownerC] != "1" {
		t.Fatalf("hand-off of a lost lock touched the holder: %v", m)
	}

	// A lost the lock and it is free: B gets it.
	if _, err := srv.Do(context.Background(), "DEL", "lock"); err != nil {
		t.Fatal(err)
	}
	r = handoffRaw(t, srv, "lock", ownerA, 1, ownerB, lease)
	if len(r.Array) != 2 || r.Array[0].Kind != redistest.KindNil || r.Array[1].Str != "1" {
		t.Fatalf("hand-off over a free lock replied %s, want [nil, \"1\"]", r)
	}
}

func TestForceUnlockScript(t *testing.T) {
	srv := redistest.Start(t)
	sub := subscribe(t, srv, channelName("lock"))
	ch := channelName("lock")

	wantInt(t, evalSHA(t, srv, forceUnlockSrc, []string{"lock", ch}, unlockMessage), 0)
	marker(t, srv, sub, ch)

	acquireRaw(t, srv, "lock", ownerA, time.Minute)
	acquireRaw(t, srv, "lock", ownerA, time.Minute)
	wantInt(t, evalSHA(t, srv, forceUnlockSrc, []string{"lock", ch}, unlockMessage), 1)
	if n := mustInt(t, srv, "EXISTS", "lock"); n != 0 {
		t.Fatal("force unlock left the lock")
	}
	if got := sub.message(t); got != unlockMessage {
		t.Fatalf("published %q", got)
	}
}

func TestRenewScriptReportsEveryKey(t *testing.T) {
	srv := redistest.Start(t)
	acquireRaw(t, srv, "held", ownerA, 5*time.Second)
	acquireRaw(t, srv, "other", ownerC, 5*time.Second)
	acquireRaw(t, srv, "held2", ownerB, 5*time.Second)

	r := evalSHA(t, srv, renewSrc, []string{"held", "other", "missing", "held2"},
		"30000", ownerA, ownerA, ownerA, ownerB)
	wantBulk(t, r, "1001")
	wantPTTL(t, srv, "held", 30*time.Second)
	wantPTTL(t, srv, "held2", 30*time.Second)
	if ttl := mustInt(t, srv, "PTTL", "other"); ttl > 5000 {
		t.Fatalf("renewal touched another owner's lock: PTTL %d", ttl)
	}
	if n := mustInt(t, srv, "EXISTS", "missing"); n != 0 {
		t.Fatal("renewal created a missing lock")
	}

	// A full default batch in one call.
	keys := make([]string, DefaultRenewBatchSize)
	args := []string{"30000"}
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
		acquireRaw(t, srv, keys[i], ownerA, 5*time.Second)
		args = append(args, ownerA)
	}
	r = evalSHA(t, srv, renewSrc, keys, args...)
	if r.Kind != redistest.KindBulk || len(r.Str) != len(keys) || r.Str != string(repeat('1', len(keys))) {
		t.Fatalf("full batch replied %s", r)
	}
}

func repeat(b byte, n int) []byte {
	s := make([]byte, n)
	for i := range s {
		s[i] = b
	}
	return s
}

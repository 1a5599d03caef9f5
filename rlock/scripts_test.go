package rlock

import (
	"strconv"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

func plainKeysOf(name string) []string {
	k := plainKeys(name)
	return k[:]
}

// acquireRaw is a try (never queued), what a caller outside the package sends.
func acquireRaw(t *testing.T, srv *scriptServer, name, owner string, lease time.Duration) redistest.Reply {
	t.Helper()
	return srv.eval(scripts.LockAcquire, plainKeysOf(name), strconv.FormatInt(lease.Milliseconds(), 10), owner, "")
}

func releaseRaw(t *testing.T, srv *scriptServer, name, owner string, expect int, lease time.Duration) redistest.Reply {
	t.Helper()
	return srv.eval(scripts.LockRelease, plainKeysOf(name),
		owner, strconv.Itoa(expect), strconv.FormatInt(lease.Milliseconds(), 10))
}

func TestAcquireScriptCreatesReentersAndRefuses(t *testing.T) {
	srv := newScriptServer(t)
	const lease = 30 * time.Second

	wantBulk(t, "acquire", acquireRaw(t, srv, "lock", ownerA, lease), "1")
	if m := srv.hash("lock"); len(m) != 1 || m[ownerA] != "1" {
		t.Fatalf("HGETALL %v, want {%s: 1}", m, ownerA)
	}
	srv.wantPTTL("lock", lease)

	wantBulk(t, "acquire", acquireRaw(t, srv, "lock", ownerA, 10*time.Second), "2")
	srv.wantPTTL("lock", 10*time.Second) // re-entry re-arms the lease it is given

	r := acquireRaw(t, srv, "lock", ownerB, lease)
	if r.Kind != redistest.KindInt || r.Int <= 0 || r.Int > 10000 {
		t.Fatalf("refused acquire replied %s, want the PTTL", r)
	}
	if m := srv.hash("lock"); len(m) != 1 || m[ownerA] != "2" {
		t.Fatalf("a refused acquire changed the lock: %v", m)
	}

	// A key without expiry (not written by a lock client) is reported as PTTL -1, never taken.
	srv.do("HSET", "plain", ownerC, "1")
	wantInt(t, "acquire", acquireRaw(t, srv, "plain", ownerA, lease), -1)
}

func TestReleaseScriptDecrementsThenDeletesAndPublishes(t *testing.T) {
	srv := newScriptServer(t)
	sub := srv.subscribe(channelName("lock"))
	const lease = 30 * time.Second

	wantNil(t, "release", releaseRaw(t, srv, "lock", ownerA, 0, lease)) // nobody holds it

	acquireRaw(t, srv, "lock", ownerA, lease)
	acquireRaw(t, srv, "lock", ownerA, lease)
	wantNil(t, "release", releaseRaw(t, srv, "lock", ownerB, 0, lease)) // not the owner: untouched
	if m := srv.hash("lock"); m[ownerA] != "2" {
		t.Fatalf("release by another owner changed the lock: %v", m)
	}

	srv.int("PEXPIRE", "lock", "5000")
	wantInt(t, "release", releaseRaw(t, srv, "lock", ownerA, 2, lease), 0)
	if m := srv.hash("lock"); m[ownerA] != "1" {
		t.Fatalf("after one release: %v", m)
	}
	srv.wantPTTL("lock", lease) // a partial release re-arms the lease
	sub.quiet(channelName("lock"))

	wantInt(t, "release", releaseRaw(t, srv, "lock", ownerA, 1, lease), 1)
	if n := srv.int("EXISTS", "lock"); n != 0 {
		t.Fatal("the last release left the lock")
	}
	if _, got := sub.message(); got != scripts.UnlockMessage {
		t.Fatalf("published %q, want %q", got, scripts.UnlockMessage)
	}
}

// A retried release (the first attempt ran but its reply was lost) must never release a second hold.
func TestReleaseScriptRetryNeverDecrementsTwice(t *testing.T) {
	srv := newScriptServer(t)
	const lease = 30 * time.Second
	for i := 0; i < 3; i++ {
		acquireRaw(t, srv, "lock", ownerA, lease)
	}

	wantInt(t, "release", releaseRaw(t, srv, "lock", ownerA, 3, lease), 0)  // the attempt that ran
	wantInt(t, "release", releaseRaw(t, srv, "lock", ownerA, 3, lease), -2) // its retry: count moved on, nothing done
	if m := srv.hash("lock"); m[ownerA] != "2" {
		t.Fatalf("retry decremented again: %v", m)
	}

	wantInt(t, "release", releaseRaw(t, srv, "lock", ownerA, 2, lease), 0)
	wantInt(t, "release", releaseRaw(t, srv, "lock", ownerA, 1, lease), 1)
	wantNil(t, "release", releaseRaw(t, srv, "lock", ownerA, 1, lease)) // retry of the last one: gone, nothing done
	wantNil(t, "release", releaseRaw(t, srv, "lock", ownerA, 0, lease))
}

func TestForceUnlockScript(t *testing.T) {
	srv := newScriptServer(t)
	sub := srv.subscribe(channelName("lock"))
	ch := channelName("lock")

	wantInt(t, "force unlock", srv.eval(scripts.DeletePublish, []string{"lock", ch}, scripts.UnlockMessage), 0)
	sub.quiet(ch)

	acquireRaw(t, srv, "lock", ownerA, time.Minute)
	acquireRaw(t, srv, "lock", ownerA, time.Minute)
	wantInt(t, "force unlock", srv.eval(scripts.DeletePublish, []string{"lock", ch}, scripts.UnlockMessage), 1)
	if n := srv.int("EXISTS", "lock"); n != 0 {
		t.Fatal("force unlock left the lock")
	}
	if _, got := sub.message(); got != scripts.UnlockMessage {
		t.Fatalf("published %q", got)
	}
}

func TestRenewScriptReportsEveryKey(t *testing.T) {
	srv := newScriptServer(t)
	acquireRaw(t, srv, "held", ownerA, 5*time.Second)
	acquireRaw(t, srv, "other", ownerC, 5*time.Second)
	acquireRaw(t, srv, "held2", ownerB, 5*time.Second)

	r := srv.eval(scripts.Renew, []string{"held", "other", "missing", "held2"},
		"30000", ownerA, ownerA, ownerA, ownerB)
	wantBulk(t, "renew", r, "1001")
	srv.wantPTTL("held", 30*time.Second)
	srv.wantPTTL("held2", 30*time.Second)
	if ttl := srv.int("PTTL", "other"); ttl > 5000 {
		t.Fatalf("renewal touched another owner's lock: PTTL %d", ttl)
	}
	if n := srv.int("EXISTS", "missing"); n != 0 {
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
	r = srv.eval(scripts.Renew, keys, args...)
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

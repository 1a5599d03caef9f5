package rlock

import (
	"strconv"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// A grant to an owner that other calls may share (a nonce that is not the owner's id: an owner pinned with
// WithOwner, as every MultiLock and RedLock pins one) is recorded in the queue's deadline set. The grantee may
// never claim it (the release's reply told its client), so the record must not outlive the queue: once the
// queue is empty, the set expires after twice the queue liveness (the set's marker lifetime).

// queueAttemptWithNonce is queueAttempt with an explicit nonce.
func queueAttemptWithNonce(srv *scriptServer, name, owner, nonce string, claim bool) redistest.Reply {
	return srv.eval(scripts.LockAcquire, plainKeysOf(name), strconv.FormatInt(queueLease.Milliseconds(), 10), owner,
		specOf("g10000", claim, nonce))
}

// wantMarkerTTL checks that the deadline set of the lock called name expires within twice the queue liveness.
func wantMarkerTTL(t *testing.T, srv *scriptServer, name string) {
	t.Helper()
	srv.wantPTTL(plainKeysOf(name)[keyDeadlines], 2*scripts.QueueLiveness)
}

func TestAGrantRecordLeftWithAnEmptyQueueExpires(t *testing.T) {
	srv := newScriptServer(t)
	keys := plainKeysOf("lock")

	// Granted by a release to its client's next waiter, nobody queued.
	wantBulk(t, "A takes it", acquireRaw(t, srv, "lock", ownerA, queueLease), "1")
	wantBulk(t, "A's release naming C", releaseNaming(srv, "lock", ownerA, ownerC, specOf("g10000", false, "77")),
		"77")
	if n := srv.int("ZSCORE", keys[keyDeadlines], ":g:"+ownerC); n != 77 {
		t.Fatalf("the grant record of C scores %d, want 77", n)
	}
	wantMarkerTTL(t, srv, "lock")
	// C releases it (its client knew of the grant from the reply and never claims it): the lock is gone, and the
	// record goes with the set when it expires.
	wantInt(t, "C's release", releaseRaw(t, srv, "lock", ownerC, 1, queueLease), 1)
	wantMarkerTTL(t, srv, "lock")

	// Handed over by a release to the last entry of the queue.
	wantBulk(t, "A takes it again", acquireRaw(t, srv, "lock", ownerA, queueLease), "1")
	if r := queueAttemptWithNonce(srv, "lock", ownerC, "88", false); r.Kind != redistest.KindInt || r.Int <= 0 {
		t.Fatalf("C's refusal %s, want the lock's PTTL", r)
	}
	if ttl := srv.int("PTTL", keys[keyDeadlines]); ttl != -1 {
		t.Fatalf("the deadline set of a queue with a waiter has PTTL %d, want none", ttl)
	}
	wantInt(t, "A's release hands it to C", releaseRaw(t, srv, "lock", ownerA, 1, queueLease), 2)
	if n := srv.int("ZSCORE", keys[keyDeadlines], ":g:"+ownerC); n != 88 {
		t.Fatalf("the grant record of C scores %d, want 88", n)
	}
	wantMarkerTTL(t, srv, "lock")
	// C's attempt still claims the grant by its record.
	wantBulk(t, "C claims", queueAttemptWithNonce(srv, "lock", ownerC, "88", true), "1")
	if n := srv.int("EXISTS", keys[keyQueue]); n != 0 {
		t.Fatal("C's claim queued it again")
	}
}

// While others wait, the set keeps their deadlines and stays without expiry.
func TestAGrantRecordWithWaitersLeftKeepsTheSet(t *testing.T) {
	srv := newScriptServer(t)
	keys := plainKeysOf("lock")
	wantBulk(t, "A takes it", acquireRaw(t, srv, "lock", ownerA, queueLease), "1")
	queueAttemptWithNonce(srv, "lock", ownerC, "88", false)
	wantInt(t, "B queued behind C", queueAttempt(srv, "lock", ownerB, "g10000", false), scripts.QueuedNotHead)
	wantInt(t, "A's release hands it to C", releaseRaw(t, srv, "lock", ownerA, 1, queueLease), 2)
	if ttl := srv.int("PTTL", keys[keyDeadlines]); ttl != -1 {
		t.Fatalf("the deadline set with B still queued has PTTL %d, want none", ttl)
	}
}

// An attempt that finds the lock expired hands it to the head of the queue on the way; when that empties the queue,
// the attempt's own entry is the next head (its reply the new holder's PTTL), and the deadline set, which the
// emptied queue had given an expiry (it keeps the grant's record), is persistent again while the entry waits. The
// next attempt queues behind it.
func TestAnAttemptQueuedIntoAQueueItEmptiedIsTheHead(t *testing.T) {
	srv := newScriptServer(t)
	keys := plainKeysOf("lock")
	wantBulk(t, "A takes it", acquireRaw(t, srv, "lock", ownerA, queueLease), "1")
	// B's call has a nonce of its own: its grant is recorded in the deadline set, which thus outlives the queue.
	wantIntIn(t, "B queued as the head", queueAttemptWithNonce(srv, "lock", ownerB, "88", false), 1,
		queueLease.Milliseconds())
	srv.do("DEL", "lock") // A's lease ran out, and nobody was told
	wantIntIn(t, "C's attempt, the head now (B's PTTL)", queueAttempt(srv, "lock", ownerC, "g10000", false), 1, 10000)
	if m := srv.hash("lock"); len(m) != 1 || m[ownerB] != "1" {
		t.Fatalf("after C's attempt the lock is %v, want B's grant", m)
	}
	if q := srv.strs("LRANGE", keys[keyQueue], "0", "-1"); len(q) != 1 || q[0] != entryOf(ownerC, "g10000") {
		t.Fatalf("the queue is %q, want C's entry alone", q)
	}
	if ttl := srv.int("PTTL", keys[keyDeadlines]); ttl != -1 {
		t.Fatalf("the deadline set with C queued has PTTL %d, want none", ttl)
	}
	wantInt(t, "A queued behind C", queueAttempt(srv, "lock", ownerA, "g10000", false), scripts.QueuedNotHead)
}

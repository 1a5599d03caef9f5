package rlock

import (
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

func rwTimeoutPrefix(name, owner string) string { return "{" + name + "}:" + owner + ":rwlock_timeout" }

func rwRead(s *famSrv, name, owner, lease string) redistest.Reply {
	return s.eval(rwReadAcquireSrc, []string{name, rwTimeoutPrefix(name, owner)}, lease, owner, owner+":write")
}

func rwWrite(s *famSrv, name, owner, lease string) redistest.Reply {
	return s.eval(rwWriteAcquireSrc, []string{name}, lease, owner+":write", owner)
}

func rwReadRelease(s *famSrv, name, owner, expect string) redistest.Reply {
	return s.eval(rwReadReleaseSrc, []string{name, "redisson_rwlock:{" + name + "}", rwTimeoutPrefix(name, owner),
		"{" + name + "}"}, owner, expect, "0")
}

func rwWriteRelease(s *famSrv, name, owner, expect, lease string) redistest.Reply {
	return s.eval(rwWriteReleaseSrc, []string{name, "redisson_rwlock:{" + name + "}"}, owner+":write", expect, lease, "1")
}

func TestRWReadScriptsShareTheLockAndKeepOneKeyPerHold(t *testing.T) {
	s := newFamSrv(t)
	ch := "redisson_rwlock:{rw}"
	sub := s.subscribe(ch)
	wantBulkReply(t, "A read", rwRead(s, "rw", famOwnerA, "2000"), "1")
	wantBulkReply(t, "A read again", rwRead(s, "rw", famOwnerA, "9000"), "2")
	wantBulkReply(t, "B read", rwRead(s, "rw", famOwnerB, "4000"), "1")
	h := s.hash("rw")
	if h["mode"] != "read" || h[famOwnerA] != "2" || h[famOwnerB] != "1" {
		t.Fatalf("hash %v", h)
	}
	pa := rwTimeoutPrefix("rw", famOwnerA)
	if p1, p2 := s.int("PTTL", pa+":1"), s.int("PTTL", pa+":2"); p1 > 2000 || p1 < 1000 || p2 < 8000 {
		t.Fatalf("hold keys' leases %d and %d, want about 2000 and 9000", p1, p2)
	}
	if p := s.int("PTTL", "rw"); p < 8000 {
		t.Fatalf("lock lease %d, want the longest hold's (9000)", p)
	}
	// A writer is refused while readers hold it.
	wantIntIn(t, "C write", rwWrite(s, "rw", famOwnerC, "5000"), 1, 9000)
	// Releasing A's newest hold deletes its key and sets the lock's lease to the longest remaining hold (B's 4 s).
	wantIntReply(t, "A mismatch", rwReadRelease(s, "rw", famOwnerA, "1"), -2)
	wantIntReply(t, "A release", rwReadRelease(s, "rw", famOwnerA, "2"), 0)
	if s.int("EXISTS", pa+":2") != 0 {
		t.Fatal("released hold's key left")
	}
	if p := s.int("PTTL", "rw"); p > 4000 || p < 3000 {
		t.Fatalf("lock lease after a release %d, want about 4000", p)
	}
	wantIntReply(t, "A last", rwReadRelease(s, "rw", famOwnerA, "1"), 0)
	sub.quiet(ch)
	wantNilReply(t, "A again", rwReadRelease(s, "rw", famOwnerA, "1"))
	wantIntReply(t, "B last", rwReadRelease(s, "rw", famOwnerB, "1"), 1)
	sub.want(ch, "0")
	if s.int("EXISTS", "rw") != 0 {
		t.Fatal("lock left after the last read release")
	}
}

func TestRWReadReleaseDropsTheLockWhenOnlyExpiredHoldsRemain(t *testing.T) {
	s := newFamSrv(t)
	rwRead(s, "rw", famOwnerA, "30000")
	rwRead(s, "rw", famOwnerB, "30000")
	// B's process died and its hold's lease ended (its key expired).
	s.do("DEL", rwTimeoutPrefix("rw", famOwnerB)+":1")
	wantIntReply(t, "A release", rwReadRelease(s, "rw", famOwnerA, "1"), 1)
	if s.int("EXISTS", "rw") != 0 {
		t.Fatal("a dead reader's expired hold kept the lock")
	}
}

func TestRWWriteScriptsExcludeReentreAndDowngrade(t *testing.T) {
	s := newFamSrv(t)
	ch := "redisson_rwlock:{rw}"
	sub := s.subscribe(ch)
	wantBulkReply(t, "A write", rwWrite(s, "rw", famOwnerA, "5000"), "1")
	wantBulkReply(t, "A write again", rwWrite(s, "rw", famOwnerA, "5000"), "2")
	wantIntIn(t, "B write", rwWrite(s, "rw", famOwnerB, "5000"), 1, 5000)
	wantIntIn(t, "B read", rwRead(s, "rw", famOwnerB, "5000"), 1, 5000)
	// The writer may take read holds (downgrade).
	wantBulkReply(t, "A read", rwRead(s, "rw", famOwnerA, "5000"), "1")
	wantIntReply(t, "A write partial", rwWriteRelease(s, "rw", famOwnerA, "2", "5000"), 0)
	sub.quiet(ch)
	wantNilReply(t, "B write release", rwWriteRelease(s, "rw", famOwnerB, "0", "5000"))
	// The last write release leaves A's read hold: the lock turns to read mode and waiters are woken.
	wantIntReply(t, "A write last", rwWriteRelease(s, "rw", famOwnerA, "1", "5000"), 1)
	sub.want(ch, "1")
	if h := s.hash("rw"); h["mode"] != "read" || h[famOwnerA] != "1" || len(h) != 2 {
		t.Fatalf("hash after downgrade %v", h)
	}
	wantBulkReply(t, "B read now", rwRead(s, "rw", famOwnerB, "5000"), "1")
	wantIntReply(t, "A read release", rwReadRelease(s, "rw", famOwnerA, "1"), 0)
	wantIntReply(t, "B read release", rwReadRelease(s, "rw", famOwnerB, "1"), 1)
	sub.want(ch, "0")

	// A write with no read holds left deletes the lock and publishes 1.
	rwWrite(s, "rw", famOwnerC, "5000")
	wantIntReply(t, "C release", rwWriteRelease(s, "rw", famOwnerC, "1", "5000"), 1)
	sub.want(ch, "1")
	if s.int("EXISTS", "rw") != 0 {
		t.Fatal("lock left after the write release")
	}
}

func TestRWWriteScriptRefusesAnUpgradeWithAnError(t *testing.T) {
	s := newFamSrv(t)
	rwRead(s, "rw", famOwnerA, "5000")
	r := rwWrite(s, "rw", famOwnerA, "5000")
	if r.Kind != redistest.KindError || !strings.HasPrefix(r.Str, "RWUPGRADE ") {
		t.Fatalf("upgrade: reply %s, want a RWUPGRADE error", r)
	}
	rwRead(s, "rw", famOwnerB, "5000")
	wantIntIn(t, "other reader's write", rwWrite(s, "rw", famOwnerC, "5000"), 1, 5000)
	wantIntReply(t, "force", s.eval(rwForceUnlockSrc, []string{"rw", "redisson_rwlock:{rw}"}, "1"), 1)
	wantBulkReply(t, "write after force", rwWrite(s, "rw", famOwnerA, "5000"), "1")
}

func TestRWRenewScriptRenewsHeldEntriesAndReportsGoneOnes(t *testing.T) {
	s := newFamSrv(t)
	s.do("HSET", "a", famOwnerA, "1")
	s.do("PEXPIRE", "a", "1000")
	s.do("HSET", "rw", "mode", "write", famOwnerB+":write", "1", famOwnerB, "2")
	s.do("PEXPIRE", "rw", "1000")
	prefix := "{rw}:" + famOwnerB + ":rwlock_timeout"
	s.do("SET", prefix+":1", "1", "PX", "1000")
	s.do("SET", prefix+":2", "1", "PX", "1000")
	s.do("HSET", "long", famOwnerC, "1")
	s.do("PEXPIRE", "long", "900000")

	r := s.eval(rwRenewSrc, []string{"a", "rw", "rw", "gone", "long"}, "30000",
		famOwnerA, "", famOwnerB+":write", "", famOwnerB, prefix, famOwnerD, "", famOwnerC, "")
	wantBulkReply(t, "renew", r, "11101")
	for _, k := range []string{"a", "rw", prefix + ":1", prefix + ":2"} {
		if p := s.int("PTTL", k); p < 29000 {
			t.Fatalf("%s not renewed: PTTL %d", k, p)
		}
	}
	if p := s.int("PTTL", "long"); p < 800000 {
		t.Fatalf("a longer lease was shortened by a renewal: PTTL %d", p)
	}
}

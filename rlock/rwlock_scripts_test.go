package rlock

import (
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

func rwTimeoutPrefix(name, owner string) string { return "{" + name + "}:" + owner + ":rwlock_timeout" }

func rwRead(s *scriptServer, name, owner, lease string) redistest.Reply {
	return s.eval(scripts.ReadAcquire, []string{name, rwTimeoutPrefix(name, owner)}, lease, owner, owner+":write")
}

func rwWrite(s *scriptServer, name, owner, lease string) redistest.Reply {
	return s.eval(scripts.WriteAcquire, []string{name}, lease, owner+":write", owner)
}

func rwReadRelease(s *scriptServer, name, owner, expect string) redistest.Reply {
	return s.eval(scripts.ReadRelease, []string{name, "redisson_rwlock:{" + name + "}", rwTimeoutPrefix(name, owner),
		"{" + name + "}"}, owner, expect, "0")
}

func rwWriteRelease(s *scriptServer, name, owner, expect, lease string) redistest.Reply {
	return s.eval(scripts.WriteRelease, []string{name, "redisson_rwlock:{" + name + "}"}, owner+":write", expect, lease, "1")
}

func TestRWReadScriptsShareTheLockAndKeepOneKeyPerHold(t *testing.T) {
	s := newScriptServer(t)
	ch := "redisson_rwlock:{rw}"
	sub := s.subscribe(ch)
	wantBulk(t, "A read", rwRead(s, "rw", ownerA, "2000"), "1")
	wantBulk(t, "A read again", rwRead(s, "rw", ownerA, "9000"), "2")
	wantBulk(t, "B read", rwRead(s, "rw", ownerB, "4000"), "1")
	h := s.hash("rw")
	if h["mode"] != "read" || h[ownerA] != "2" || h[ownerB] != "1" {
		t.Fatalf("hash %v", h)
	}
	pa := rwTimeoutPrefix("rw", ownerA)
	if p1, p2 := s.int("PTTL", pa+":1"), s.int("PTTL", pa+":2"); p1 > 2000 || p1 < 1000 || p2 < 8000 {
		t.Fatalf("hold keys' leases %d and %d, want about 2000 and 9000", p1, p2)
	}
	if p := s.int("PTTL", "rw"); p < 8000 {
		t.Fatalf("lock lease %d, want the longest hold's (9000)", p)
	}
	// A writer is refused while readers hold it.
	wantIntIn(t, "C write", rwWrite(s, "rw", ownerC, "5000"), 1, 9000)
	// Releasing A's newest hold deletes its key and sets the lock's lease to the longest remaining hold (B's 4 s).
	wantInt(t, "A mismatch", rwReadRelease(s, "rw", ownerA, "1"), -2)
	// A keeps its first hold (2 s lease): the reply says how long it has left.
	r := rwReadRelease(s, "rw", ownerA, "2")
	if r.Kind != redistest.KindArray || len(r.Array) != 2 || r.Array[0].Int != 0 || r.Array[1].Int > 2000 ||
		r.Array[1].Int < 1000 {
		t.Fatalf("A release: reply %s, want [0, about 2000]", r)
	}
	if s.int("EXISTS", pa+":2") != 0 {
		t.Fatal("released hold's key left")
	}
	if p := s.int("PTTL", "rw"); p > 4000 || p < 3000 {
		t.Fatalf("lock lease after a release %d, want about 4000", p)
	}
	wantInt(t, "A last", rwReadRelease(s, "rw", ownerA, "1"), 0)
	sub.quiet(ch)
	wantNil(t, "A again", rwReadRelease(s, "rw", ownerA, "1"))
	wantInt(t, "B last", rwReadRelease(s, "rw", ownerB, "1"), 1)
	sub.want(ch, "0")
	if s.int("EXISTS", "rw") != 0 {
		t.Fatal("lock left after the last read release")
	}
}

func TestRWReadReleaseDropsTheLockWhenOnlyExpiredHoldsRemain(t *testing.T) {
	s := newScriptServer(t)
	rwRead(s, "rw", ownerA, "30000")
	rwRead(s, "rw", ownerB, "30000")
	// B's process died and its hold's lease ended (its key expired).
	s.do("DEL", rwTimeoutPrefix("rw", ownerB)+":1")
	wantInt(t, "A release", rwReadRelease(s, "rw", ownerA, "1"), 1)
	if s.int("EXISTS", "rw") != 0 {
		t.Fatal("a dead reader's expired hold kept the lock")
	}
}

func TestRWWriteScriptsExcludeReentreAndDowngrade(t *testing.T) {
	s := newScriptServer(t)
	ch := "redisson_rwlock:{rw}"
	sub := s.subscribe(ch)
	wantBulk(t, "A write", rwWrite(s, "rw", ownerA, "5000"), "1")
	wantBulk(t, "A write again", rwWrite(s, "rw", ownerA, "5000"), "2")
	wantIntIn(t, "B write", rwWrite(s, "rw", ownerB, "5000"), 1, 5000)
	wantIntIn(t, "B read", rwRead(s, "rw", ownerB, "5000"), 1, 5000)
	// The writer may take read holds (downgrade).
	wantBulk(t, "A read", rwRead(s, "rw", ownerA, "5000"), "1")
	wantInt(t, "A write partial", rwWriteRelease(s, "rw", ownerA, "2", "5000"), 0)
	sub.quiet(ch)
	wantNil(t, "B write release", rwWriteRelease(s, "rw", ownerB, "0", "5000"))
	// The last write release leaves A's read hold: the lock turns to read mode and waiters are woken.
	wantInt(t, "A write last", rwWriteRelease(s, "rw", ownerA, "1", "5000"), 1)
	sub.want(ch, "1")
	if h := s.hash("rw"); h["mode"] != "read" || h[ownerA] != "1" || len(h) != 2 {
		t.Fatalf("hash after downgrade %v", h)
	}
	wantBulk(t, "B read now", rwRead(s, "rw", ownerB, "5000"), "1")
	wantInt(t, "A read release", rwReadRelease(s, "rw", ownerA, "1"), 0)
	wantInt(t, "B read release", rwReadRelease(s, "rw", ownerB, "1"), 1)
	sub.want(ch, "0")

	// A write with no read holds left deletes the lock and publishes 1.
	rwWrite(s, "rw", ownerC, "5000")
	wantInt(t, "C release", rwWriteRelease(s, "rw", ownerC, "1", "5000"), 1)
	sub.want(ch, "1")
	if s.int("EXISTS", "rw") != 0 {
		t.Fatal("lock left after the write release")
	}
}

func TestRWWriteScriptRefusesAnUpgradeWithAnError(t *testing.T) {
	s := newScriptServer(t)
	rwRead(s, "rw", ownerA, "5000")
	r := rwWrite(s, "rw", ownerA, "5000")
	if r.Kind != redistest.KindError || !strings.HasPrefix(r.Str, "RWUPGRADE ") {
		t.Fatalf("upgrade: reply %s, want a RWUPGRADE error", r)
	}
	rwRead(s, "rw", ownerB, "5000")
	wantIntIn(t, "other reader's write", rwWrite(s, "rw", ownerC, "5000"), 1, 5000)
	wantInt(t, "force", s.eval(scripts.DeletePublish, []string{"rw", "redisson_rwlock:{rw}"}, "1"), 1)
	wantBulk(t, "write after force", rwWrite(s, "rw", ownerA, "5000"), "1")
}

func TestRWRenewScriptRenewsHeldEntriesAndReportsGoneOnes(t *testing.T) {
	s := newScriptServer(t)
	s.do("HSET", "a", ownerA, "1")
	s.do("PEXPIRE", "a", "1000")
	s.do("HSET", "rw", "mode", "write", ownerB+":write", "1", ownerB, "2")
	s.do("PEXPIRE", "rw", "1000")
	prefix := "{rw}:" + ownerB + ":rwlock_timeout"
	s.do("SET", prefix+":1", "1", "PX", "1000")
	s.do("SET", prefix+":2", "1", "PX", "1000")
	s.do("HSET", "long", ownerC, "1")
	s.do("PEXPIRE", "long", "900000")

	r := s.eval(scripts.RWRenew, []string{"a", "rw", "rw", "gone", "long"}, "30000",
		ownerA, "", ownerB+":write", "", ownerB, prefix, ownerD, "", ownerC, "")
	wantBulk(t, "renew", r, "11101")
	for _, k := range []string{"a", "rw", prefix + ":1", prefix + ":2"} {
		if p := s.int("PTTL", k); p < 29000 {
			t.Fatalf("%s not renewed: PTTL %d", k, p)
		}
	}
	if p := s.int("PTTL", "long"); p < 800000 {
		t.Fatalf("a longer lease was shortened by a renewal: PTTL %d", p)
	}
}

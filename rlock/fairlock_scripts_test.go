package rlock

import (
	"strconv"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

func TestFairAcquireScriptGrantsReentersAndNeverQueuesANoWaitTry(t *testing.T) {
	s := newScriptServer(t)
	k := fairKeys("fair")
	wantBulk(t, "grant", s.eval(scripts.FairLockAcquire, k, "5000", ownerA, "10000", "0"), "1")
	wantBulk(t, "re-entry", s.eval(scripts.FairLockAcquire, k, "5000", ownerA, "10000", "0"), "2")
	wantIntIn(t, "no-wait try", s.eval(scripts.FairLockAcquire, k, "5000", ownerB, "0", "0"), 1, 5000)
	if n := s.int("EXISTS", k[1], k[2]); n != 0 {
		t.Fatalf("a try without waiting was queued (%d keys)", n)
	}
	if h := s.hash("fair"); h[ownerA] != "2" || len(h) != 1 {
		t.Fatalf("lock hash %v", h)
	}
}

func TestFairAcquireScriptQueuesInArrivalOrderWithServerDeadlines(t *testing.T) {
	s := newScriptServer(t)
	k := fairKeys("fair")
	s.eval(scripts.FairLockAcquire, k, "5000", ownerA, "10000", "0")

	before := s.millis()
	// The head waiter is told the lock's PTTL; waiters behind it the time to the head's deadline.
	wantIntIn(t, "B (head)", s.eval(scripts.FairLockAcquire, k, "5000", ownerB, "10000", "0"), 1, 5000)
	wantIntIn(t, "C", s.eval(scripts.FairLockAcquire, k, "5000", ownerC, "60000", "0"), 9000, 10000)
	wantIntIn(t, "D", s.eval(scripts.FairLockAcquire, k, "5000", ownerD, "3000", "0"), 9000, 10000)
	after := s.millis()
	if q := s.strs("LRANGE", k[1], "0", "-1"); len(q) != 3 || q[0] != ownerB || q[1] != ownerC || q[2] != ownerD {
		t.Fatalf("queue %v, want B C D", q)
	}
	// Each waiter's deadline is its own wait from now, on the server's clock.
	for o, wait := range map[string]int64{ownerB: 10000, ownerC: 60000, ownerD: 3000} {
		if d := s.score(k[2], o); d < before+wait || d > after+wait {
			t.Fatalf("deadline of %s = %d, want %d + [%d, %d]", o, d, wait, before, after)
		}
	}
	// An attempt of a queued waiter refreshes its deadline and keeps its place.
	s.eval(scripts.FairLockAcquire, k, "5000", ownerC, "90000", "0")
	if d := s.score(k[2], ownerC); d < before+90000 {
		t.Fatalf("deadline of C not refreshed: %d", d)
	}
	if q := s.strs("LRANGE", k[1], "0", "-1"); len(q) != 3 || q[1] != ownerC {
		t.Fatalf("queue after a refresh %v", q)
	}
}

func TestFairReleaseScriptWakesOnlyTheHeadWaiter(t *testing.T) {
	s := newScriptServer(t)
	k := fairKeys("fair")
	chB, chC := k[3]+":"+ownerB, k[3]+":"+ownerC
	sub := s.subscribe(chB, chC)
	s.eval(scripts.FairLockAcquire, k, "5000", ownerA, "10000", "0")
	s.eval(scripts.FairLockAcquire, k, "5000", ownerA, "10000", "0")
	s.eval(scripts.FairLockAcquire, k, "5000", ownerB, "10000", "0")
	s.eval(scripts.FairLockAcquire, k, "5000", ownerC, "10000", "0")

	wantNil(t, "not the owner", s.eval(scripts.FairLockRelease, k, ownerB, "0", "5000", "0"))
	wantInt(t, "count mismatch", s.eval(scripts.FairLockRelease, k, ownerA, "1", "5000", "0"), -2)
	wantInt(t, "partial", s.eval(scripts.FairLockRelease, k, ownerA, "2", "5000", "0"), 0)
	sub.quiet(chB)
	wantInt(t, "last", s.eval(scripts.FairLockRelease, k, ownerA, "1", "5000", "0"), 1)
	sub.want(chB, "0")
	sub.quiet(chC)

	// C tries before B (it missed nothing, it is just early): refused, and B, the head, is nudged.
	wantIntIn(t, "C while B is head", s.eval(scripts.FairLockAcquire, k, "5000", ownerC, "10000", "0"), 9000, 10000)
	sub.want(chB, "0")
	// A no-wait try of a newcomer cannot take the free lock from the queue either.
	wantIntIn(t, "newcomer", s.eval(scripts.FairLockAcquire, k, "5000", ownerD, "0", "0"), 1, 10000)
	sub.want(chB, "0")
	wantBulk(t, "B", s.eval(scripts.FairLockAcquire, k, "5000", ownerB, "10000", "0"), "1")
	if q := s.strs("LRANGE", k[1], "0", "-1"); len(q) != 1 || q[0] != ownerC {
		t.Fatalf("queue %v, want C", q)
	}
	if s.score(k[2], ownerB) != -1 {
		t.Fatal("B's deadline left behind")
	}
}

func TestFairScriptsDropWaitersPastTheirDeadline(t *testing.T) {
	s := newScriptServer(t)
	k := fairKeys("fair")
	chC := k[3] + ":" + ownerC
	sub := s.subscribe(chC)
	s.eval(scripts.FairLockAcquire, k, "5000", ownerA, "10000", "0")
	s.eval(scripts.FairLockAcquire, k, "5000", ownerB, "10000", "0")
	s.eval(scripts.FairLockAcquire, k, "5000", ownerC, "10000", "0")
	// B's process died: its deadline passes (set in the past here rather than waited for).
	s.do("ZADD", k[2], strconv.FormatInt(s.millis()-1, 10), ownerB)

	// The release drops B and wakes C.
	wantInt(t, "release", s.eval(scripts.FairLockRelease, k, ownerA, "1", "5000", "0"), 1)
	sub.want(chC, "0")
	if q := s.strs("LRANGE", k[1], "0", "-1"); len(q) != 1 || q[0] != ownerC {
		t.Fatalf("queue %v, want C", q)
	}
	wantBulk(t, "C", s.eval(scripts.FairLockAcquire, k, "5000", ownerC, "10000", "0"), "1")
	if n := s.int("EXISTS", k[1], k[2]); n != 0 {
		t.Fatalf("queue keys left: %d", n)
	}
}

func TestFairLeaveScriptRemovesTheWaiterAndWakesTheNextHead(t *testing.T) {
	s := newScriptServer(t)
	k := fairKeys("fair")
	chC, chD := k[3]+":"+ownerC, k[3]+":"+ownerD
	sub := s.subscribe(chC, chD)
	s.eval(scripts.FairLockAcquire, k, "100000", ownerA, "10000", "0")
	for _, o := range []string{ownerB, ownerC, ownerD} {
		s.eval(scripts.FairLockAcquire, k, "5000", o, "10000", "0")
	}
	dC, dD := s.score(k[2], ownerC), s.score(k[2], ownerD)
	// C gives up while the lock is held: nobody is woken, and the others' deadlines stay as they were.
	wantInt(t, "C leaves", s.eval(scripts.FairLockLeave, k, ownerC, "0"), 1)
	sub.quiet(chD)
	if s.score(k[2], ownerC) != -1 || s.score(k[2], ownerD) != dD || dC <= 0 {
		t.Fatalf("deadlines after C left: C %d D %d (was %d)", s.score(k[2], ownerC), s.score(k[2], ownerD), dD)
	}
	wantInt(t, "C again", s.eval(scripts.FairLockLeave, k, ownerC, "0"), 0)
	// The lock goes; B, the head, gives up: D is woken at once.
	s.do("DEL", "fair")
	wantInt(t, "B leaves", s.eval(scripts.FairLockLeave, k, ownerB, "0"), 1)
	sub.want(chD, "0")
	if q := s.strs("LRANGE", k[1], "0", "-1"); len(q) != 1 || q[0] != ownerD {
		t.Fatalf("queue %v, want D", q)
	}
	// Force unlock wakes the head too.
	s.do("HSET", "fair", ownerA, "1")
	wantInt(t, "force", s.eval(scripts.FairLockForceUnlock, k, "0"), 1)
	sub.want(chD, "0")
	r := s.eval(scripts.FairLockForceUnlock, k, "0")
	wantReply(t, "force again", r, redistest.KindInt, "0")
}

package rlock

import (
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

func fencedKeys(name string) []string {
	return append(plainKeysOf(name), prefixName(lockTokenPrefix, name))
}

// fencedTry is a fenced acquire without waiting (never queued).
func fencedTry(s *scriptServer, keys []string, lease, owner string) redistest.Reply {
	return s.eval(scripts.FencedLockAcquire, keys, lease, owner, "")
}

func TestFencedAcquireScriptIncrementsTheTokenOnEveryGrant(t *testing.T) {
	s := newScriptServer(t)
	keys := fencedKeys("fenced")
	before := s.millis() * 1000
	var first int64
	for i := 1; i <= 3; i++ {
		r := fencedTry(s, keys, "5000", ownerA)
		if r.Kind != redistest.KindArray || len(r.Array) != 2 || r.Array[0].Int != int64(i) {
			t.Fatalf("grant %d: reply %s, want [count %d, token]", i, r, i)
		}
		if i == 1 {
			first = r.Array[1].Int
			// A missing counter is seeded from the server's clock in microseconds.
			if first <= before || first > (s.millis()+1000)*1000 {
				t.Fatalf("first token %d, want the server's clock in µs (about %d)", first, before)
			}
		} else if r.Array[1].Int != first+int64(i-1) {
			t.Fatalf("grant %d: token %d, want %d", i, r.Array[1].Int, first+int64(i-1))
		}
	}
	if got := s.hash("fenced"); got[ownerA] != "3" || len(got) != 1 {
		t.Fatalf("lock hash %v", got)
	}
	// Another owner is refused with the PTTL, and the token does not move.
	wantIntIn(t, "refused", fencedTry(s, keys, "5000", ownerB), 1, 5000)
	if n := s.int("GET", keys[numPlainKeys]); n != first+2 {
		t.Fatalf("token after a refusal = %d, want %d", n, first+2)
	}
	// The lease is applied on every grant, re-entry included.
	fencedTry(s, keys, "200000", ownerA)
	if p := s.int("PTTL", "fenced"); p < 199000 {
		t.Fatalf("PTTL after a re-entry with a 200 s lease = %d", p)
	}
	// Released by the plain release, the next owner gets the next token.
	for range 4 {
		s.eval(scripts.LockRelease, plainKeysOf("fenced"), ownerA, "0", "5000")
	}
	if s.int("EXISTS", "fenced") != 0 {
		t.Fatal("lock still exists after four releases")
	}
	r := fencedTry(s, keys, "5000", ownerB)
	if r.Kind != redistest.KindArray || r.Array[1].Int != first+4 {
		t.Fatalf("next owner's grant %s, want token %d", r, first+4)
	}
	// A counter lost (a restart without persistence) is seeded again from the clock: later tokens stay larger.
	s.do("DEL", keys[numPlainKeys])
	s.eval(scripts.LockRelease, plainKeysOf("fenced"), ownerB, "0", "5000")
	r = fencedTry(s, keys, "5000", ownerC)
	if r.Kind != redistest.KindArray || r.Array[1].Int <= first+4 {
		t.Fatalf("grant after the counter was lost: %s, want a token above %d", r, first+4)
	}
	// A counter Redisson started from 1 is incremented as it is.
	s.do("SET", keys[numPlainKeys], "41")
	s.eval(scripts.LockRelease, plainKeysOf("fenced"), ownerC, "0", "5000")
	if r := fencedTry(s, keys, "5000", ownerA); r.Kind != redistest.KindArray || r.Array[1].Int != 42 {
		t.Fatalf("grant over an existing counter: %s, want token 42", r)
	}
}

package rlock

import (
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

func TestFencedAcquireScriptIncrementsTheTokenOnEveryGrant(t *testing.T) {
	s := newScriptServer(t)
	keys := []string{"fenced", "redisson_lock_token:{fenced}"}
	for i := 1; i <= 3; i++ {
		r := s.eval(fencedAcquireSrc, keys, "5000", ownerA)
		if r.Kind != redistest.KindArray || len(r.Array) != 2 || r.Array[0].Int != int64(i) || r.Array[1].Int != int64(i) {
			t.Fatalf("grant %d: reply %s, want [count %d, token %d]", i, r, i, i)
		}
	}
	if got := s.hash("fenced"); got[ownerA] != "3" || len(got) != 1 {
		t.Fatalf("lock hash %v", got)
	}
	// Another owner is refused with the PTTL, and the token does not move.
	wantIntIn(t, "refused", s.eval(fencedAcquireSrc, keys, "5000", ownerB), 1, 5000)
	if n := s.int("GET", keys[1]); n != 3 {
		t.Fatalf("token after a refusal = %d, want 3", n)
	}
	// The lease is applied on every grant, re-entry included.
	s.eval(fencedAcquireSrc, keys, "200000", ownerA)
	if p := s.int("PTTL", "fenced"); p < 199000 {
		t.Fatalf("PTTL after a re-entry with a 200 s lease = %d", p)
	}
	// Released by the plain release, the next owner gets the next token.
	for range 4 {
		s.eval(releaseSrc, []string{"fenced", "redisson_lock__channel:{fenced}"}, ownerA, "0", "5000", "0")
	}
	if s.int("EXISTS", "fenced") != 0 {
		t.Fatal("lock still exists after four releases")
	}
	r := s.eval(fencedAcquireSrc, keys, "5000", ownerB)
	if r.Kind != redistest.KindArray || r.Array[1].Int != 5 {
		t.Fatalf("next owner's grant %s, want token 5", r)
	}
}

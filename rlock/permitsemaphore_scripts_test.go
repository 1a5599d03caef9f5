package rlock

import (
	"strconv"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

func TestPermitSemaphoreScriptsIssueIDsWithLeasesAndTakeExpiredOnesBack(t *testing.T) {
	s := newScriptServer(t)
	k := []string{"pes", "{pes}:timeout", "redisson_sc:{pes}"}
	sub := s.subscribe(k[2])
	wantInt(t, "try set", s.eval(scripts.PermitTrySetPermits, k, "2"), 1)
	sub.want(k[2], "2")
	id1, id2, id3 := "\x01\x02\x03\xff", "\x00id-two", "id-three"
	before := s.millis()
	wantBulk(t, "acquire with lease", s.eval(scripts.PermitAcquire, k, "60000", id1), "OK")
	wantBulk(t, "acquire without lease", s.eval(scripts.PermitAcquire, k, "0", id2), "OK")
	if d := s.score(k[1], id1); d < before+60000 || d > s.millis()+60000 {
		t.Fatalf("lease end of id1 = %d, want now + 60000 on the server clock", d)
	}
	if d := s.str("ZSCORE", k[1], id2); d != scripts.PermitNoExpiry {
		t.Fatalf("lease end of id2 = %s, want %s", d, scripts.PermitNoExpiry)
	}
	// None left: refused with the time until id1's lease ends.
	wantIntIn(t, "acquire none left", s.eval(scripts.PermitAcquire, k, "1000", id3), 59000, 60000)
	r := s.eval(scripts.PermitAvailable, k)
	if r.Kind != redistest.KindArray || r.Array[0].Int != 0 || r.Array[1].Int != 2 {
		t.Fatalf("available %s, want [0 2]", r)
	}
	// Update the lease of a held permit; an unknown id is not updated.
	wantInt(t, "update", s.eval(scripts.PermitUpdateLease, k, id1, "1000"), 1)
	wantInt(t, "update unknown", s.eval(scripts.PermitUpdateLease, k, id3, "1000"), 0)
	// id1's lease ends (moved into the past here rather than waited for): the next operation takes it back.
	s.do("ZADD", k[1], strconv.FormatInt(s.millis()-1, 10), id1)
	wantBulk(t, "acquire after expiry", s.eval(scripts.PermitAcquire, k, "0", id3), "OK")
	sub.want(k[2], "1")
	// Releasing the expired id1 releases nothing; id2 and id3 release.
	wantInt(t, "release expired", s.eval(scripts.PermitRelease, k, id1), 0)
	sub.quiet(k[2])
	wantInt(t, "release two", s.eval(scripts.PermitRelease, k, id2, id3), 2)
	sub.want(k[2], "2")
	wantInt(t, "release twice", s.eval(scripts.PermitRelease, k, id2), 0)
	wantInt(t, "add", s.eval(scripts.PermitAddPermits, k, "3"), 5)
	sub.want(k[2], "5")
	// Nothing held, none expiring: a refused acquire says -1 (wait for a release).
	s.eval(scripts.PermitAddPermits, k, "-5")
	wantInt(t, "acquire, nothing expiring", s.eval(scripts.PermitAcquire, k, "0", id1), -1)
}

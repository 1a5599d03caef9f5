package rlock

import (
	"strconv"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

func rlKeys(name, client string) []string {
	return []string{name, "{" + name + "}:value", "{" + name + "}:value:" + client, "{" + name + "}:permits",
		"{" + name + "}:permits:" + client}
}

func TestRateLimiterScriptsSlideTheWindow(t *testing.T) {
	s := newScriptServer(t)
	k := rlKeys("rl", "client-1")
	r := s.eval(scripts.RateAcquire, k, "1", "rnd")
	if r.Kind != redistest.KindError || !strings.HasPrefix(r.Str, "RATENOTSET ") {
		t.Fatalf("acquire without a rate: %s", r)
	}
	wantInt(t, "try set", s.eval(scripts.RateTrySetRate, k[:1], "3", "60000", "0", "0"), 1)
	wantInt(t, "try set again", s.eval(scripts.RateTrySetRate, k[:1], "9", "60000", "0", "0"), 0)
	if h := s.hash("rl"); h["rate"] != "3" || h["interval"] != "60000" || h["type"] != "0" || h["keepAliveTime"] != "0" {
		t.Fatalf("config %v", h)
	}
	r = s.eval(scripts.RateAcquire, k, "4", "rnd")
	if r.Kind != redistest.KindError || !strings.HasPrefix(r.Str, "RATEEXCEEDED ") {
		t.Fatalf("acquire over the rate: %s", r)
	}
	wantNil(t, "acquire 2", s.eval(scripts.RateAcquire, k, "2", "r1"))
	wantInt(t, "available", s.eval(scripts.RateAvailable, k), 1)
	wantNil(t, "acquire 1", s.eval(scripts.RateAcquire, k, "1", "r2"))
	wantIntIn(t, "acquire, window used up", s.eval(scripts.RateAcquire, k, "1", "r3"), 59000, 60003)
	if n := s.int("ZCARD", k[3]); n != 2 {
		t.Fatalf("grants recorded %d, want 2", n)
	}
	// The first grant leaves the window (moved a window into the past here rather than waited for): its 2 permits come
	// back, the second grant's 1 permit stays used.
	members := s.strs("ZRANGE", k[3], "0", "0")
	s.do("ZADD", k[3], strconv.FormatInt(s.millis()-60001, 10), members[0])
	wantInt(t, "available after slide", s.eval(scripts.RateAvailable, k), 2)
	wantNil(t, "acquire 2 after slide", s.eval(scripts.RateAcquire, k, "2", "r4"))
	wantIntIn(t, "refused again", s.eval(scripts.RateAcquire, k, "1", "r5"), 1, 60003)
}

func TestRateLimiterScriptsKeepPerClientStateApartAndApplyKeepAlive(t *testing.T) {
	s := newScriptServer(t)
	k1, k2 := rlKeys("rl", "c1"), rlKeys("rl", "c2")
	s.eval(scripts.RateSetRate, k1, "1", "60000", "1", "120000")
	wantNil(t, "c1", s.eval(scripts.RateAcquire, k1, "1", "a"))
	wantIntIn(t, "c1 again", s.eval(scripts.RateAcquire, k1, "1", "b"), 59000, 60003)
	wantNil(t, "c2 has its own window", s.eval(scripts.RateAcquire, k2, "1", "a"))
	for _, key := range []string{"rl", k1[2], k1[4]} {
		if p := s.int("PTTL", key); p < 119000 {
			t.Fatalf("%s keep-alive PTTL %d", key, p)
		}
	}
	// SetRate replaces the rate and starts a fresh window.
	s.eval(scripts.RateSetRate, k1, "5", "60000", "0", "0")
	if p := s.int("PTTL", "rl"); p != -1 {
		t.Fatalf("config PTTL after SetRate without keep-alive %d", p)
	}
	wantInt(t, "fresh window", s.eval(scripts.RateAvailable, k1), 5)
}

func TestFixedWindowScriptCountsPerWindowAndRefundsRefusals(t *testing.T) {
	s := newScriptServer(t)
	k := []string{"fw"}
	wantInt(t, "1", s.eval(scripts.FixedWindow, k, "2", "10000", "3"), 0)
	if p := s.int("PTTL", "fw"); p < 9000 {
		t.Fatalf("window not set: PTTL %d", p)
	}
	wantInt(t, "2", s.eval(scripts.FixedWindow, k, "1", "10000", "3"), 0)
	wantIntIn(t, "refused", s.eval(scripts.FixedWindow, k, "1", "10000", "3"), 9000, 10000)
	if n := s.int("GET", "fw"); n != 3 {
		t.Fatalf("counter %d after a refusal, want 3", n)
	}
	// A counter without expiry gets the window's.
	s.do("SET", "fw2", "1")
	s.eval(scripts.FixedWindow, []string{"fw2"}, "1", "10000", "3")
	if p := s.int("PTTL", "fw2"); p < 9000 {
		t.Fatalf("counter without expiry: PTTL %d", p)
	}
}

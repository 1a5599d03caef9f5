package rlock

import (
	"testing"

	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

func TestSemaphoreScriptsTakeReleaseSetAddAndDrain(t *testing.T) {
	s := newScriptServer(t)
	k := []string{"sem", "redisson_sc:{sem}"}
	sub := s.subscribe(k[1])
	wantInt(t, "acquire unset", s.eval(scripts.SemaphoreAcquire, k[:1], "1"), 0)
	wantInt(t, "try set", s.eval(scripts.SemaphoreTrySetPermits, k, "3", "0"), 1)
	sub.want(k[1], "3")
	wantInt(t, "try set again", s.eval(scripts.SemaphoreTrySetPermits, k, "7", "0"), 0)
	wantInt(t, "acquire 2", s.eval(scripts.SemaphoreAcquire, k[:1], "2"), 1)
	wantInt(t, "acquire 2 more", s.eval(scripts.SemaphoreAcquire, k[:1], "2"), 0)
	if n := s.int("GET", "sem"); n != 1 {
		t.Fatalf("available %d, want 1", n)
	}
	wantInt(t, "release 2", s.eval(scripts.SemaphoreRelease, k, "2"), 3)
	sub.want(k[1], "3")
	wantInt(t, "add -4", s.eval(scripts.SemaphoreAddPermits, k, "-4"), -1)
	sub.quiet(k[1])
	wantInt(t, "acquire below zero", s.eval(scripts.SemaphoreAcquire, k[:1], "1"), 0)
	wantInt(t, "add 5", s.eval(scripts.SemaphoreAddPermits, k, "5"), 4)
	sub.want(k[1], "4")
	wantInt(t, "drain", s.eval(scripts.SemaphoreDrain, k[:1]), 4)
	wantInt(t, "drain empty", s.eval(scripts.SemaphoreDrain, k[:1]), 0)
	if n := s.int("GET", "sem"); n != 0 {
		t.Fatalf("available after drain %d", n)
	}
}

func TestSemaphoreTrySetAppliesTheTimeToLive(t *testing.T) {
	s := newScriptServer(t)
	k := []string{"sem", "redisson_sc:{sem}"}
	wantInt(t, "try set", s.eval(scripts.SemaphoreTrySetPermits, k, "3", "60000"), 1)
	if p := s.int("PTTL", "sem"); p < 59000 {
		t.Fatalf("PTTL %d", p)
	}
	s.eval(scripts.SemaphoreAcquire, k[:1], "3")
	s.eval(scripts.SemaphoreDrain, k[:1])
	if p := s.int("PTTL", "sem"); p < 59000 {
		t.Fatalf("PTTL after acquire and drain %d: the time to live was dropped", p)
	}
}

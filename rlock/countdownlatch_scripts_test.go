package rlock

import (
	"testing"

	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

func TestLatchScriptsSetCountDownAndPublish(t *testing.T) {
	s := newScriptServer(t)
	k := []string{"latch", "redisson_countdownlatch__channel__{latch}"}
	sub := s.subscribe(k[1])
	wantInt(t, "count down open", s.eval(scripts.LatchCountDown, k, "0"), 0)
	sub.quiet(k[1])
	if s.int("EXISTS", "latch") != 0 {
		t.Fatal("counting down an open latch created it")
	}
	wantInt(t, "try set", s.eval(scripts.LatchTrySetCount, k, "2", "1"), 1)
	sub.want(k[1], "1")
	wantInt(t, "try set again", s.eval(scripts.LatchTrySetCount, k, "5", "1"), 0)
	wantInt(t, "count down", s.eval(scripts.LatchCountDown, k, "0"), 1)
	sub.quiet(k[1])
	wantInt(t, "count down to zero", s.eval(scripts.LatchCountDown, k, "0"), 0)
	sub.want(k[1], "0")
	if s.int("EXISTS", "latch") != 0 {
		t.Fatal("latch at zero not deleted")
	}
	s.eval(scripts.LatchTrySetCount, k, "3", "1")
	sub.want(k[1], "1")
	wantInt(t, "delete", s.eval(scripts.DeletePublish, k, "1"), 1)
	sub.want(k[1], "1")
	wantInt(t, "delete open", s.eval(scripts.DeletePublish, k, "1"), 0)
}

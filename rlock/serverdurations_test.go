package rlock

import (
	"math"
	"testing"
	"time"
)

// Every millisecond count the server can send converts to a duration that neither overflows nor turns negative.
func TestServerDurationsAreClamped(t *testing.T) {
	const century = 100 * 365 * 24 * time.Hour
	for _, c := range []struct {
		ms          int64
		bound, told time.Duration
	}{
		{-2, recheckBound, -2 * time.Millisecond},
		{-1, recheckBound, -time.Millisecond},
		{0, time.Millisecond, 0},
		{1500, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{int64(48 * time.Hour / time.Millisecond), 24 * time.Hour, 48 * time.Hour},
		{9223370241039944803, 24 * time.Hour, century}, // PTTL of PEXPIREAT 9223372036854775000
		{math.MaxInt64, 24 * time.Hour, century},
		{math.MinInt64, recheckBound, -century},
	} {
		if got := ttlBound(c.ms); got != c.bound {
			t.Errorf("ttlBound(%d) = %v, want %v", c.ms, got, c.bound)
		}
		if got := serverMillis(c.ms); got != c.told {
			t.Errorf("serverMillis(%d) = %v, want %v", c.ms, got, c.told)
		}
	}
}

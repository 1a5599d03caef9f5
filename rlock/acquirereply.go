package rlock

import (
	"time"

	"github.com/locksmith-go/locksmith/resp"
)

// The replies of the acquire scripts, as the lock kinds decode them (the fenced lock's is in fencedlock.go): a
// grant with the owner's hold count, or a refusal with the bound of the wait before the next attempt.

// parseAcquire decodes the plain lock's acquire reply (and the fair and read-write locks', which answer alike): a
// bulk string holding the owner's new hold count (at least 1) = granted; an integer = refused, the lock's PTTL.
func parseAcquire(v resp.Value) outcome {
	switch {
	case v.Type == resp.BulkString && !v.Null:
		n, err := v.AsInt64()
		if err == nil && n < 1 {
			err = &resp.TypeError{Want: "a hold count of at least 1", Got: v.Type}
		}
		return outcome{granted: err == nil, count: n, err: err}
	case v.Type == resp.Integer:
		return outcome{bound: ttlBound(v.Int)}
	}
	return outcome{err: &resp.TypeError{Want: "hold count or PTTL", Got: v.Type}}
}

// ttlBound turns a refusal's PTTL (milliseconds) into the bound of the wait before the next attempt: the holder's
// remaining lease, at least a millisecond (a key in its last millisecond answers 0: it is about to expire, and an
// expiry publishes nothing), or recheckBound for a key without expiry (-1) or none (-2).
func ttlBound(ms int64) time.Duration {
	if ms < 0 {
		return recheckBound
	}
	// A PTTL near 2^63 ms (a key given an absurd expiry by something else) would overflow a Duration; a day is
	// longer than any lease a lock client sets, and a release still wakes the waiter at once.
	return max(time.Duration(min(ms, maxBoundMillis))*time.Millisecond, time.Millisecond)
}

// maxBoundMillis caps every duration read from the server (ttlBound).
const maxBoundMillis = int64(24 * time.Hour / time.Millisecond)

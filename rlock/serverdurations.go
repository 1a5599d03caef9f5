package rlock

import "time"

// Durations read from the server. A key's PTTL, a permit's lease end or a rate window's rest is whatever the key
// was given, and something else than a lock client may have given it an absurd expiry (PEXPIREAT near 2^63 ms,
// the largest the server accepts): converted to a Duration as it is, such a value overflows into a negative or
// tiny one, and a waiter bounded by it would attempt again every millisecond. Every duration read from the server
// goes through one of the conversions below.

// maxBoundMillis caps the bound of a wait read from the server (ttlBound): a day is longer than any lease a lock
// client sets, and a release still wakes the waiter at once.
const maxBoundMillis = int64(24 * time.Hour / time.Millisecond)

// maxServerMillis caps a duration the server reports (serverMillis): a century is longer than any lease or window
// a client sets, and small enough that adding it to any clock reading of the process cannot overflow.
const maxServerMillis = int64(100 * 365 * 24 * time.Hour / time.Millisecond)

// ttlBound turns a refusal's PTTL (milliseconds) into the bound of the wait before the next attempt: the holder's
// remaining lease (at most maxBoundMillis), at least a millisecond (a key in its last millisecond answers 0: it is
// about to expire, and an expiry publishes nothing), or recheckBound for a key without expiry (-1) or none (-2).
func ttlBound(ms int64) time.Duration {
	if ms < 0 {
		return recheckBound
	}
	return max(time.Duration(min(ms, maxBoundMillis))*time.Millisecond, time.Millisecond)
}

// serverMillis converts a duration the server reports in milliseconds, clamped to ±maxServerMillis: a report of
// a remaining lease or a configured window, which a caller may add to a clock reading.
func serverMillis(ms int64) time.Duration {
	return time.Duration(max(min(ms, maxServerMillis), -maxServerMillis)) * time.Millisecond
}

package rlock

import (
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

package workload

import (
	"crypto/sha1"
	"encoding/hex"
)

// Script is a Lua script with its SHA-1, run with EVALSHA (EVAL when the
// server does not have it yet).
type Script struct {
	Src string
	SHA string
}

// NewScript computes src's SHA-1.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{Src: src, SHA: hex.EncodeToString(sum[:])}
}

// The Redisson-style lock scripts used for the server ceiling and by the raw
// baselines (BENCHMARKS.md in the project's shared notes describes them):
// a HASH per lock whose field is the owner and whose value is the hold count.
// They stand in for the library's own scripts until rlock exports them; the
// ceiling then switches to those.
var (
	// AcquireScript: KEYS[1] lock; ARGV[1] lease in ms, ARGV[2] owner.
	// Creates or re-enters the lock and returns nil, or returns the lock's
	// PTTL when another owner holds it.
	AcquireScript = NewScript(`if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`)

	// ReleaseScript: KEYS[1] lock, KEYS[2] unlock channel; ARGV[1] unlock
	// message, ARGV[2] lease in ms, ARGV[3] owner. Returns nil when the owner
	// does not hold the lock, 0 when it still holds it (re-entered), 1 when
	// the lock was deleted and the unlock message published.
	ReleaseScript = NewScript(`if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
local n = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if n > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`)
)

// UnlockChannel is the Redisson unlock channel of lock name.
func UnlockChannel(name string) string { return "redisson_lock__channel:{" + name + "}" }

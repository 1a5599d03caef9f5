package rlock

import "github.com/locksmith-go/locksmith/conn"

// The fenced lock's scripts, in Redisson's keyspace (RedissonFencedLock): the plain lock's HASH and channel, plus
//
//	token  STRING redisson_lock_token:{<name>}, INCR'd by every acquire, re-entry included
//
// Redisson's lockAndGetToken(leaseTime) drops the lease and takes the watchdog; here every acquire form applies the
// lease it is given.

// fencedAcquireSrc creates or re-enters the lock and increments the token in the same step, so no two grants can
// ever share a token and a later grant always has a larger one.
//
//	KEYS[1] lock name
//	KEYS[2] token key
//	ARGV[1] lease in milliseconds
//	ARGV[2] owner
//
// Reply: an array {hold count, token} = granted; an integer = refused, the lock's PTTL (-1: no expiry).
const fencedAcquireSrc = `if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local token = redis.call('incr', KEYS[2])
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {n, token}
end
return redis.call('pttl', KEYS[1])`

// The fenced lock releases and force-unlocks with the plain lock's scripts (releaseSrc, deletePublishSrc): same
// hash, same channel.

var fencedAcquireScript = conn.NewScript(fencedAcquireSrc)

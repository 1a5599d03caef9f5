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

// famReleaseSrc releases one hold of a lock in the plain lock's layout (HASH <name>, field owner -> count): the
// fenced lock's release. It is the plain lock's conditional release: the client sends the hold count it knows the
// owner has, so a retry after an ambiguous failure finds a different count (or no field) and changes nothing, with
// no latch key written per unlock (see the package documentation, "Release and retries").
//
//	KEYS[1] lock name
//	KEYS[2] unlock channel redisson_lock__channel:{name}
//	ARGV[1] owner
//	ARGV[2] the hold count the owner expects, or 0 for "whatever it is"
//	ARGV[3] lease in milliseconds, re-armed while holds remain
//	ARGV[4] unlock message ("0")
//
// Reply: nil = not held by the owner; 0 = one hold released, others remain; 1 = released, deleted and published;
// -n = the owner holds n, not the count expected: nothing changed.
const famReleaseSrc = `local c = redis.call('hget', KEYS[1], ARGV[1])
if not c then return nil end
c = tonumber(c)
local e = tonumber(ARGV[2])
if e > 0 and c ~= e then return -c end
if c > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  redis.call('pexpire', KEYS[1], ARGV[3])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[4])
return 1`

// famForceUnlockSrc deletes a lock in the plain layout whoever holds it and publishes the unlock message.
//
//	KEYS[1] lock name
//	KEYS[2] unlock channel
//	ARGV[1] unlock message
//
// Reply: 1 = deleted; 0 = there was no lock.
const famForceUnlockSrc = `if redis.call('del', KEYS[1]) == 1 then
  redis.call('publish', KEYS[2], ARGV[1])
  return 1
end
return 0`

var (
	fencedAcquireScript  = conn.NewScript(fencedAcquireSrc)
	famReleaseScript     = conn.NewScript(famReleaseSrc)
	famForceUnlockScript = conn.NewScript(famForceUnlockSrc)
)

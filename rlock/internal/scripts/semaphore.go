package rlock

// The semaphore's scripts, in Redisson's keyspace (RedissonSemaphore):
//
//	permits  STRING <name>: the number of available permits (absent: never set)
//	channel  redisson_sc:{<name>}: published with the number of available permits after every change that adds
//	         permits, so waiters know how many of them may succeed
//
// Every script is one round trip and atomic; none needs the server's clock.

// semAcquireSrc takes n permits if that many are available.
//
//	KEYS[1] semaphore name
//	ARGV[1] permits (n > 0)
//
// Reply: 1 = taken; 0 = fewer than n available (or the semaphore was never set).
const semAcquireSrc = `local v = redis.call('get', KEYS[1])
if v ~= false and tonumber(v) >= tonumber(ARGV[1]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  return 1
end
return 0`

// semReleaseSrc returns n permits and publishes the new number available.
//
//	KEYS[1] semaphore name
//	KEYS[2] channel
//	ARGV[1] permits (n > 0)
//	last ARGV: the publish command (publishLua)
//
// Reply: the number of permits available afterwards.
const semReleaseSrc = publishLua + `local v = redis.call('incrby', KEYS[1], ARGV[1])
pub(KEYS[2], v)
return v`

// semTrySetSrc sets the number of permits if the semaphore was never set (or was deleted).
//
//	KEYS[1] semaphore name
//	KEYS[2] channel
//	ARGV[1] permits
//	ARGV[2] time to live of the semaphore in milliseconds, 0 = none (Redisson's trySetPermits(permits, ttl))
//	last ARGV: the publish command (publishLua)
//
// Reply: 1 = set; 0 = it was set already, nothing changed.
const semTrySetSrc = publishLua + `if redis.call('exists', KEYS[1]) == 1 then return 0 end
if tonumber(ARGV[2]) > 0 then
  redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
else
  redis.call('set', KEYS[1], ARGV[1])
end
pub(KEYS[2], ARGV[1])
return 1`

// semAddSrc adds n permits (n may be negative: the number available may then drop below zero, and acquires wait
// until releases bring it back) and publishes the new number when it grew.
//
//	KEYS[1] semaphore name
//	KEYS[2] channel
//	ARGV[1] permits to add (non-zero)
//	last ARGV: the publish command (publishLua)
//
// Reply: the number of permits available afterwards.
const semAddSrc = publishLua + `local v = redis.call('incrby', KEYS[1], ARGV[1])
if tonumber(ARGV[1]) > 0 then
  pub(KEYS[2], v)
end
return v`

// semDrainSrc takes every available permit.
//
//	KEYS[1] semaphore name
//
// Reply: the number of permits taken (0 when none, or never set).
const semDrainSrc = `local v = redis.call('get', KEYS[1])
if v == false then return 0 end
v = tonumber(v)
if v <= 0 then return 0 end
redis.call('set', KEYS[1], 0, 'keepttl')
return v`

var (
	semAcquireScript = newScript(semAcquireSrc)
	semReleaseScript = newScript(semReleaseSrc)
	semTrySetScript  = newScript(semTrySetSrc)
	semAddScript     = newScript(semAddSrc)
	semDrainScript   = newScript(semDrainSrc)
)

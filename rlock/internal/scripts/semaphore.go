package scripts

// The semaphore's scripts, in Redisson's keyspace (RedissonSemaphore):
//
//	permits  STRING <name>: the number of available permits (absent: never set)
//	channel  redisson_sc:{<name>}: published with the number of available permits after every change that adds
//	         permits, so waiters know how many of them may succeed
//
// Every script is one round trip and atomic; none needs the server's clock.

// SemaphoreAcquire takes n permits if that many are available.
var SemaphoreAcquire = Script{
	Name:   "semaphore.acquire",
	Keys:   []string{"semaphore name"},
	Args:   []string{"permits (n > 0)"},
	Reply:  "1 = taken; 0 = fewer than n available (or the semaphore was never set)",
	Source: semAcquireLua,
}

const semAcquireLua = `local v = redis.call('get', KEYS[1])
if v ~= false and tonumber(v) >= tonumber(ARGV[1]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  return 1
end
return 0`

// SemaphoreRelease returns n permits and publishes the new number available.
var SemaphoreRelease = Script{
	Name:   "semaphore.release",
	Keys:   []string{"semaphore name", "channel (redisson_sc:{name})"},
	Args:   []string{"permits (n > 0)", publishArg},
	Reply:  "the number of permits available afterwards",
	Source: publishing(semReleaseLua),
}

const semReleaseLua = `local v = redis.call('incrby', KEYS[1], ARGV[1])
pub(KEYS[2], v)
return v`

// SemaphoreTrySetPermits sets the number of permits if the semaphore was never set (or was deleted).
var SemaphoreTrySetPermits = Script{
	Name: "semaphore.trysetpermits",
	Keys: []string{"semaphore name", "channel"},
	Args: []string{"permits",
		"time to live of the semaphore in milliseconds, 0 = none (Redisson's trySetPermits(permits, ttl))", publishArg},
	Reply:  "1 = set; 0 = it was set already, nothing changed",
	Source: publishing(semTrySetLua),
}

const semTrySetLua = `if redis.call('exists', KEYS[1]) == 1 then return 0 end
if tonumber(ARGV[2]) > 0 then
  redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
else
  redis.call('set', KEYS[1], ARGV[1])
end
pub(KEYS[2], ARGV[1])
return 1`

// SemaphoreAddPermits adds n permits (n may be negative: the number available may then drop below zero, and
// acquires wait until releases bring it back) and publishes the new number when it grew.
var SemaphoreAddPermits = Script{
	Name:   "semaphore.addpermits",
	Keys:   []string{"semaphore name", "channel"},
	Args:   []string{"permits to add (non-zero)", publishArg},
	Reply:  "the number of permits available afterwards",
	Source: publishing(semAddLua),
}

const semAddLua = `local v = redis.call('incrby', KEYS[1], ARGV[1])
if tonumber(ARGV[1]) > 0 then
  pub(KEYS[2], v)
end
return v`

// SemaphoreDrain takes every available permit.
var SemaphoreDrain = Script{
	Name:   "semaphore.drain",
	Keys:   []string{"semaphore name"},
	Reply:  "the number of permits taken (0 when none, or never set)",
	Source: semDrainLua,
}

const semDrainLua = `local v = redis.call('get', KEYS[1])
if v == false then return 0 end
v = tonumber(v)
if v <= 0 then return 0 end
redis.call('set', KEYS[1], 0, 'keepttl')
return v`

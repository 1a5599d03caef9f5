package scripts

// The permit-expirable semaphore's scripts, in Redisson's keyspace (RedissonPermitExpirableSemaphore):
//
//	permits  STRING <name>: the number of available permits
//	leases   ZSET {<name>}:timeout: permit id -> the instant (Unix ms) its lease ends; PermitNoExpiry for a permit
//	         without lease. Ids are 16 random bytes, stored raw (Redisson stores the bytes its hex ids decode to)
//	channel  redisson_sc:{<name>}: published with the number available when permits come back
//
// Lease ends are on the server's clock (TIME; see the fair lock's scripts for why that is allowed in a script that
// writes). Redisson uses the clock of whichever client runs the script. Every script first takes back the permits
// whose lease ended, so an expired permit returns to the pool at the next operation, whoever makes it.

// PermitNoExpiry is the lease end Redisson records for a permit without lease (its nonExpirableTimeout).
const PermitNoExpiry = "922337203685477"

// pesReclaimLua computes now (server ms) and returns the permits whose lease ended to the pool, publishing the new
// number available. KEYS[1] is the permits key, KEYS[2] the lease set, KEYS[3] the channel.
const pesReclaimLua = `redis.replicate_commands()
local t = redis.call('time')
local now = ` + serverMillisLua + `
local expired = redis.call('zremrangebyscore', KEYS[2], 0, now)
if expired > 0 then
  local v = redis.call('incrby', KEYS[1], expired)
  if v > 0 then pub(KEYS[3], v) end
end
`

// pesKeys describes the three keys every permit-expirable semaphore script takes.
var pesKeys = []string{"permits (name)", "leases ({name}:timeout)", "channel (redisson_sc:{name})"}

// PermitAcquire takes n permits, each under its own id with the given lease.
var PermitAcquire = Script{
	Name: "permitsemaphore.acquire",
	Keys: pesKeys,
	Args: []string{"lease in milliseconds (0 = none)", "ARGV[2..n+1]: the new permits' ids", publishArg},
	Reply: "the bulk string \"OK\" = taken; an integer = refused: the milliseconds until the earliest lease ends " +
		"(when a permit may come back without a release), or -1 when no permit has a lease",
	Source: publishing(pesReclaimLua + pesAcquireLua),
}

const pesAcquireLua = `local n = #ARGV - 1
local v = redis.call('get', KEYS[1])
if v ~= false and tonumber(v) >= n then
  redis.call('decrby', KEYS[1], n)
  local ends = '` + PermitNoExpiry + `'
  if tonumber(ARGV[1]) > 0 then ends = now + tonumber(ARGV[1]) end
  for i = 2, #ARGV do
    redis.call('zadd', KEYS[2], ends, ARGV[i])
  end
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end
  return 'OK'
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[1] and first[2] ~= '` + PermitNoExpiry + `' then
  return math.max(tonumber(first[2]) - now, 1)
end
return -1`

// PermitRelease releases permits by id: those still held go back to the pool.
var PermitRelease = Script{
	Name: "permitsemaphore.release",
	Keys: pesKeys,
	Args: []string{"ARGV[1..n]: permit ids", publishArg},
	Reply: "the number of ids that were held and are now released. An id whose lease ended (already taken back) or " +
		"that was released before, or never issued, is not counted",
	Source: publishing(pesReclaimLua + pesReleaseLua),
}

const pesReleaseLua = `local removed = 0
for i = 1, #ARGV do
  removed = removed + redis.call('zrem', KEYS[2], ARGV[i])
end
if removed > 0 then
  local v = redis.call('incrby', KEYS[1], removed)
  pub(KEYS[3], v)
end
return removed`

// PermitUpdateLease gives a held permit a new lease, counted from now.
var PermitUpdateLease = Script{
	Name:   "permitsemaphore.updatelease",
	Keys:   pesKeys,
	Args:   []string{"permit id", "lease in milliseconds (0 = none)", publishArg},
	Reply:  "1 = updated; 0 = the permit is not held (released, expired or unknown)",
	Source: publishing(pesReclaimLua + pesUpdateLeaseLua),
}

const pesUpdateLeaseLua = `if not redis.call('zscore', KEYS[2], ARGV[1]) then return 0 end
local ends = '` + PermitNoExpiry + `'
if tonumber(ARGV[2]) > 0 then ends = now + tonumber(ARGV[2]) end
redis.call('zadd', KEYS[2], ends, ARGV[1])
return 1`

// PermitAvailable reports the permits available and held, after taking back the expired ones.
var PermitAvailable = Script{
	Name:   "permitsemaphore.available",
	Keys:   pesKeys,
	Args:   []string{publishArg},
	Reply:  "{available, held}",
	Source: publishing(pesReclaimLua + pesAvailableLua),
}

const pesAvailableLua = `local v = redis.call('get', KEYS[1])
if v == false then v = 0 end
return {tonumber(v), redis.call('zcard', KEYS[2])}`

// PermitTrySetPermits sets the number of permits if it was never set.
var PermitTrySetPermits = Script{
	Name:   "permitsemaphore.trysetpermits",
	Keys:   pesKeys,
	Args:   []string{"permits", publishArg},
	Reply:  "1 = set; 0 = already set",
	Source: publishing(pesTrySetLua),
}

const pesTrySetLua = `if redis.call('exists', KEYS[1]) == 1 then return 0 end
redis.call('set', KEYS[1], ARGV[1])
pub(KEYS[3], ARGV[1])
return 1`

// PermitAddPermits adds n permits (n may be negative) and publishes the new number available when it grew.
var PermitAddPermits = Script{
	Name:   "permitsemaphore.addpermits",
	Keys:   pesKeys,
	Args:   []string{"permits to add (non-zero)", publishArg},
	Reply:  "the number available afterwards",
	Source: publishing(pesAddLua),
}

const pesAddLua = `local v = redis.call('incrby', KEYS[1], ARGV[1])
if tonumber(ARGV[1]) > 0 then pub(KEYS[3], v) end
return v`

package rlock

// The permit-expirable semaphore's scripts, in Redisson's keyspace (RedissonPermitExpirableSemaphore):
//
//	permits  STRING <name>: the number of available permits
//	leases   ZSET {<name>}:timeout: permit id -> the instant (Unix ms) its lease ends; pesNoExpiry for a permit
//	         without lease. Ids are 16 random bytes, stored raw (Redisson stores the bytes its hex ids decode to)
//	channel  redisson_sc:{<name>}: published with the number available when permits come back
//
// Lease ends are on the server's clock (TIME; see the fair lock's scripts for why that is allowed in a script that
// writes). Redisson uses the clock of whichever client runs the script. Every script first takes back the permits
// whose lease ended, so an expired permit returns to the pool at the next operation, whoever makes it.

// pesNoExpiry is the lease end Redisson records for a permit without lease (its nonExpirableTimeout).
const pesNoExpiry = "922337203685477"

// pesReclaimLua computes now (server ms) and returns the permits whose lease ended to the pool, publishing the new
// number available. KEYS[1] is the permits key, KEYS[2] the lease set, KEYS[3] the channel.
const pesReclaimLua = publishLua + `redis.replicate_commands()
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('zremrangebyscore', KEYS[2], 0, now)
if expired > 0 then
  local v = redis.call('incrby', KEYS[1], expired)
  if v > 0 then pub(KEYS[3], v) end
end
`

// pesAcquireSrc takes n permits, each under its own id with the given lease.
//
//	KEYS[1..3] permits, leases, channel
//	ARGV[1] lease in milliseconds; 0 = no lease
//	ARGV[2..n+1] the new permits' ids
//	last ARGV: the publish command (publishLua)
//
// Reply: the bulk string "OK" = taken; an integer = refused: the milliseconds until the earliest lease ends (when
// a permit may come back without a release), or -1 when no permit has a lease.
const pesAcquireSrc = pesReclaimLua + `local n = #ARGV - 1
local v = redis.call('get', KEYS[1])
if v ~= false and tonumber(v) >= n then
  redis.call('decrby', KEYS[1], n)
  local ends = '` + pesNoExpiry + `'
  if tonumber(ARGV[1]) > 0 then ends = now + tonumber(ARGV[1]) end
  for i = 2, #ARGV do
    redis.call('zadd', KEYS[2], ends, ARGV[i])
  end
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end
  return 'OK'
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[1] and first[2] ~= '` + pesNoExpiry + `' then
  return math.max(tonumber(first[2]) - now, 1)
end
return -1`

// pesReleaseSrc releases permits by id: those still held go back to the pool.
//
//	KEYS[1..3] permits, leases, channel
//	ARGV[1..] permit ids
//	last ARGV: the publish command (publishLua)
//
// Reply: the number of ids that were held and are now released. An id whose lease ended (already taken back) or
// that was released before, or never issued, is not counted.
const pesReleaseSrc = pesReclaimLua + `local removed = 0
for i = 1, #ARGV do
  removed = removed + redis.call('zrem', KEYS[2], ARGV[i])
end
if removed > 0 then
  local v = redis.call('incrby', KEYS[1], removed)
  pub(KEYS[3], v)
end
return removed`

// pesUpdateLeaseSrc gives a held permit a new lease, counted from now.
//
//	KEYS[1..3] permits, leases, channel
//	ARGV[1] permit id
//	ARGV[2] lease in milliseconds; 0 = no lease
//	last ARGV: the publish command (publishLua)
//
// Reply: 1 = updated; 0 = the permit is not held (released, expired or unknown).
const pesUpdateLeaseSrc = pesReclaimLua + `if not redis.call('zscore', KEYS[2], ARGV[1]) then return 0 end
local ends = '` + pesNoExpiry + `'
if tonumber(ARGV[2]) > 0 then ends = now + tonumber(ARGV[2]) end
redis.call('zadd', KEYS[2], ends, ARGV[1])
return 1`

// pesAvailableSrc reports the permits available and held, after taking back the expired ones.
//
//	KEYS[1..3] permits, leases, channel
//	last ARGV: the publish command (publishLua)
//
// Reply: {available, held}.
const pesAvailableSrc = pesReclaimLua + `local v = redis.call('get', KEYS[1])
if v == false then v = 0 end
return {tonumber(v), redis.call('zcard', KEYS[2])}`

// pesTrySetSrc sets the number of permits if it was never set.
//
//	KEYS[1..3] permits, leases, channel
//	ARGV[1] permits
//	last ARGV: the publish command (publishLua)
//
// Reply: 1 = set; 0 = already set.
const pesTrySetSrc = publishLua + `if redis.call('exists', KEYS[1]) == 1 then return 0 end
redis.call('set', KEYS[1], ARGV[1])
pub(KEYS[3], ARGV[1])
return 1`

// pesAddSrc adds n permits (n may be negative) and publishes the new number available when it grew.
//
//	KEYS[1..3] permits, leases, channel
//	ARGV[1] permits to add (non-zero)
//	last ARGV: the publish command (publishLua)
//
// Reply: the number available afterwards.
const pesAddSrc = publishLua + `local v = redis.call('incrby', KEYS[1], ARGV[1])
if tonumber(ARGV[1]) > 0 then pub(KEYS[3], v) end
return v`

var (
	pesAcquireScript     = newScript(pesAcquireSrc)
	pesReleaseScript     = newScript(pesReleaseSrc)
	pesUpdateLeaseScript = newScript(pesUpdateLeaseSrc)
	pesAvailableScript   = newScript(pesAvailableSrc)
	pesTrySetScript      = newScript(pesTrySetSrc)
	pesAddScript         = newScript(pesAddSrc)
)

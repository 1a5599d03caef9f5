package scripts

// The fair lock's scripts, in Redisson's keyspace (RedissonFairLock):
//
//	lock      HASH <name>, field <clientUUID>:<ownerID> -> hold count, PEXPIRE = lease (the plain lock's layout)
//	queue     LIST redisson_lock_queue:{<name>}: waiting owners, first come first served
//	deadlines ZSET redisson_lock_timeout:{<name>}: owner -> the instant (Unix ms) after which it counts as gone
//	channel   redisson_lock__channel:{<name>}:<owner>: one per waiter; a release wakes the head waiter only
//
// Deadlines come from the server's clock (redis.call('TIME')), not the client's (Redisson passes
// System.currentTimeMillis() of whichever client runs the script): every deadline in the set is then on one clock,
// so clients whose clocks disagree can neither reorder nor starve each other's waiters. TIME is non-deterministic,
// which Redis accepts in a script that writes only under effects replication: the default since Redis 5 and the
// only mode of Redis 7 (the replicas and the AOF receive the script's writes, not the script). The scripts call
// redis.replicate_commands() first, a no-op returning true on Redis 7 that switches Redis 3.2 and 4 to effects
// replication too.
//
// A waiter's deadline is its own: the instant it gives up (a TryLock's wait) or, for a wait without bound, the end
// of a liveness window it refreshes with each attempt. A waiter whose deadline passed is removed when it reaches
// the head of the queue, so a waiter whose process died delays the others by no more than its own wait. Redisson
// stores position-based deadlines instead (the previous waiter's plus the thread wait time, all shifted when one
// leaves); with per-waiter deadlines nothing needs shifting: a waiter that gives up removes itself, and the rest
// keep theirs. See the FairLock documentation for what a Redisson client sharing the queue sees.

// fairNowLua computes now, the server's time in Unix milliseconds, and removes from the head of the queue every
// waiter whose deadline passed (or that has none: a queue entry without a deadline is debris). It is the prelude
// of every fair-lock script, inside publishing. KEYS[2] is the queue, KEYS[3] the deadline set, KEYS[4] the prefix
// of the waiters' channels.
//
// It also defines what keeps the queue live: whenever a script leaves a different waiter at the head than it found
// there (the head was granted, gave up, or was dropped as stale), the new head is woken on its channel
// (wakeNewHead), so that it attempts at once and learns, as head, how long the lock's lease runs, instead of
// sleeping towards the old head's deadline. wake publishes to one waiter, once per script.
const fairNowLua = `redis.replicate_commands()
local t = redis.call('time')
local now = ` + serverMillisLua + `
local head0 = redis.call('lindex', KEYS[2], 0)
local woken = nil
local function wake(h, msg)
  if h and h ~= woken then
    pub(KEYS[4] .. ':' .. h, msg)
    woken = h
  end
end
local function wakeNewHead(me, msg)
  local h = redis.call('lindex', KEYS[2], 0)
  if h and h ~= head0 and h ~= me then wake(h, msg) end
end
while true do
  local first = redis.call('lindex', KEYS[2], 0)
  if not first then break end
  local d = redis.call('zscore', KEYS[3], first)
  if d and tonumber(d) > now then break end
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], first)
end
`

// fairKeys describes the four keys every fair-lock script takes.
var fairKeys = []string{"lock name", "queue (redisson_lock_queue:{name})", "deadlines (redisson_lock_timeout:{name})",
	"channel prefix (redisson_lock__channel:{name}; the head's channel is prefix:<owner>)"}

// fairWakeArg describes the wake-up message every fair-lock script but the acquire takes.
const fairWakeArg = "wake-up message (\"0\")"

// FairLockAcquire takes the lock when it is free and the caller is first in line (or nobody waits), re-enters it
// for its owner, and otherwise queues the caller (or refreshes its deadline) and says how long to wait at most.
// When the lock is free but the head is another, living waiter, that waiter is woken (it may have missed its
// message): nobody else may take the lock before it. A grant to the head wakes the waiter after it, which is head
// now (see fairNowLua).
var FairLockAcquire = Script{
	Name: "fairlock.acquire",
	Keys: fairKeys,
	Args: []string{"lease in milliseconds", "owner",
		"the waiter's deadline in milliseconds from now on the server's clock " +
			"(0 = a try without waiting, never queued)",
		fairWakeArg, publishArg},
	Reply: "a bulk string = granted, the owner's new hold count. An integer = refused: for the head waiter the " +
		"lock's PTTL (it is woken on its channel when the lock is released; -1: the key has no expiry), for a waiter " +
		"further back the time until the head's deadline (when the head may be dropped), for a try without waiting " +
		"the lock's PTTL",
	Source: publishing(fairNowLua + fairAcquireLua),
}

const fairAcquireLua = `if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  wakeNewHead(ARGV[2], ARGV[4])
  return tostring(n)
end
local head = redis.call('lindex', KEYS[2], 0)
local free = redis.call('exists', KEYS[1]) == 0
if free and ((not head) or head == ARGV[2]) then
  if head then
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], ARGV[2])
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  wakeNewHead(ARGV[2], ARGV[4])
  return '1'
end
local wait = tonumber(ARGV[3])
if wait <= 0 then
  wakeNewHead(ARGV[2], ARGV[4])
  if free then
    wake(head, ARGV[4])
    return math.max(tonumber(redis.call('zscore', KEYS[3], head)) - now, 1)
  end
  return redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], now + wait, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
head = redis.call('lindex', KEYS[2], 0)
wakeNewHead(ARGV[2], ARGV[4])
if head == ARGV[2] then
  return redis.call('pttl', KEYS[1])
end
if free then
  wake(head, ARGV[4])
end
return math.max(tonumber(redis.call('zscore', KEYS[3], head)) - now, 1)`

// FairLockRelease releases one hold like the plain lock's release (conditional on the expected hold count, so a
// retry after an ambiguous failure changes nothing), and when the last hold goes it wakes the head waiter, on its
// own channel, instead of every waiter.
var FairLockRelease = Script{
	Name: "fairlock.release",
	Keys: fairKeys,
	Args: []string{"owner", "expected hold count (0 = any)", "lease in milliseconds, re-armed while holds remain",
		fairWakeArg, publishArg},
	Reply: "nil = the owner does not hold the lock (the head is woken if the lock is free: it may be waiting for a " +
		"lease that ended); 0 = one hold released, others remain; 1 = released and the head woken; -n = the owner " +
		"holds n, not the count expected: nothing changed",
	Source: publishing(fairNowLua + fairReleaseLua),
}

const fairReleaseLua = `local c = redis.call('hget', KEYS[1], ARGV[1])
if not c then
  if redis.call('exists', KEYS[1]) == 0 then
    wake(redis.call('lindex', KEYS[2], 0), ARGV[4])
  end
  wakeNewHead(nil, ARGV[4])
  return nil
end
wakeNewHead(nil, ARGV[4])
` + expectCountLua + decrementLua + `redis.call('del', KEYS[1])
wake(redis.call('lindex', KEYS[2], 0), ARGV[4])
return 1`

// FairLockLeave takes a waiter that gave up (its wait ran out, its context ended) out of the queue, Redisson's
// acquireFailed. The deadlines of the others are not touched: they are their own. When the leaver was the head,
// the new head is woken at once (see fairNowLua).
var FairLockLeave = Script{
	Name:   "fairlock.leave",
	Keys:   fairKeys,
	Args:   []string{"owner", fairWakeArg, publishArg},
	Reply:  "1 = the owner was queued and is not any more; 0 = it was not queued",
	Source: publishing(fairNowLua + fairLeaveLua),
}

const fairLeaveLua = `local n = redis.call('lrem', KEYS[2], 0, ARGV[1])
redis.call('zrem', KEYS[3], ARGV[1])
wakeNewHead(ARGV[1], ARGV[2])
if n > 0 then return 1 end
return 0`

// FairLockForceUnlock deletes the lock whoever holds it and wakes the head waiter.
var FairLockForceUnlock = Script{
	Name:   "fairlock.forceunlock",
	Keys:   fairKeys,
	Args:   []string{fairWakeArg, publishArg},
	Reply:  "1 = the lock existed and was deleted; 0 = there was no lock",
	Source: publishing(fairNowLua + fairForceUnlockLua),
}

const fairForceUnlockLua = `local n = redis.call('del', KEYS[1])
wake(redis.call('lindex', KEYS[2], 0), ARGV[1])
return n`

package scripts

// The read-write lock's scripts, in Redisson's keyspace (RedissonReadLock, RedissonWriteLock):
//
//	lock      HASH <name>: field mode = read|write; a reader's field <clientUUID>:<ownerID> -> its read hold count;
//	          the writer's field <clientUUID>:<ownerID>:write -> its write hold count. PEXPIRE = the longest lease.
//	holds     STRING {<name>}:<clientUUID>:<ownerID>:rwlock_timeout:<n>, one per read hold n of an owner, with
//	          that hold's own lease, so that read holds with different leases end independently
//	channel   redisson_rwlock:{<name>}: "0" when a read lock (or the last hold) goes, wakes one waiter; "1" when the
//	          write lock goes, wakes every waiter (any number of readers may then enter)
//
// Semantics kept from Redisson: any number of readers, or one writer; a writer may also take read holds
// (downgrade) and keeps the write lock until it releases it; both modes re-enter; readers are not held back by a
// waiting writer (no writer preference, as Redisson). Changed: a reader asking for the write lock while it holds a
// read hold is refused with an error instead of waiting forever for itself (Redisson deadlocks until its own read
// lease runs out); a write re-entry sets the lease to the longer of the remaining and the new one (Redisson adds
// them); the last write release that leaves read holds publishes "1" too, so waiting readers may join them.

// ReadAcquire takes one read hold.
var ReadAcquire = Script{
	Name: "rwlock.readacquire",
	Keys: []string{"lock name", "owner's hold-key prefix ({name}:<owner>:rwlock_timeout)"},
	Args: []string{"lease in milliseconds", "owner", "owner's write field (<owner>:write)"},
	Reply: "a bulk string = granted, the owner's read hold count (the index of the new hold key); an integer = " +
		"refused, the lock's PTTL",
	Source: rwReadAcquireLua,
}

const rwReadAcquireLua = `local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  return '1'
end
if mode == 'read' or redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':' .. n, 1, 'px', ARGV[1])
  local ttl = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(ttl, tonumber(ARGV[1])))
  return tostring(n)
end
return redis.call('pttl', KEYS[1])`

// WriteAcquire takes one write hold.
var WriteAcquire = Script{
	Name: "rwlock.writeacquire",
	Keys: []string{"lock name"},
	Args: []string{"lease in milliseconds", "owner's write field (<owner>:write)", "owner (its read field)"},
	Reply: "a bulk string = granted, the write hold count; an integer = refused, the lock's PTTL; the error " +
		"\"RWUPGRADE ...\" = the owner holds a read hold and no write hold: it would wait for itself forever",
	Source: rwWriteAcquireLua,
}

const rwWriteAcquireLua = `local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return '1'
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local ttl = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(ttl, tonumber(ARGV[1])))
  return tostring(n)
end
if mode == 'read' and redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
  return redis.error_reply('RWUPGRADE the owner holds the read lock; release its read holds before taking the write lock')
end
return redis.call('pttl', KEYS[1])`

// rwChannelKey describes a read-write lock's channel, and rwHoldPrefixesKey the key prefix of every owner's read
// holds (an owner's keys are {name}:<owner>:rwlock_timeout:<n>).
const (
	rwChannelKey      = "channel (redisson_rwlock:{name})"
	rwHoldPrefixesKey = "every owner's hold-key prefix ({name})"
)

// ReadRelease releases the owner's newest read hold (conditional on the expected count, like every release of
// rlock). When other holds remain the lock's lease becomes the longest remaining read hold's; when none remains
// (only expired holds of gone readers) the lock is deleted and "0" published. Each read hold has its own lease, so
// the reply of a release that leaves the owner read holds tells the client when the longest of them ends: its
// local end of the owner's read lock moves to that one's.
var ReadRelease = Script{
	Name: "rwlock.readrelease",
	Keys: []string{"lock name", rwChannelKey, "owner's hold-key prefix ({name}:<owner>:rwlock_timeout)",
		rwHoldPrefixesKey},
	Args: []string{"owner", "expected read hold count (0 = any)", "message (\"0\")", publishArg},
	Reply: "nil = the owner holds no read hold; 0 = released, the lock remains (other holds); 1 = released and the " +
		"lock deleted; -n = the owner holds n read holds, not the count expected: nothing changed; {0, ms} = " +
		"released, the lock remains and so do n-1 read holds of the owner, the longest of which has ms milliseconds " +
		"left (0 or less: they all expired)",
	Source: publishing(holdCountLua + rwReadReleaseLua),
}

const rwReadReleaseLua = `local own = nil
if c == 1 then
  redis.call('hdel', KEYS[1], ARGV[1])
else
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  own = -2
  for i = c - 1, 1, -1 do
    own = math.max(own, redis.call('pttl', KEYS[3] .. ':' .. i))
  end
end
redis.call('del', KEYS[3] .. ':' .. c)
local mode = redis.call('hget', KEYS[1], 'mode')
local kept = 0
if own then kept = {0, own} end
if redis.call('hlen', KEYS[1]) > 1 then
  local longest = -3
  for _, f in ipairs(redis.call('hkeys', KEYS[1])) do
    local n = tonumber(redis.call('hget', KEYS[1], f))
    if n then
      for i = n, 1, -1 do
        longest = math.max(longest, redis.call('pttl', KEYS[4] .. ':' .. f .. ':rwlock_timeout:' .. i))
      end
    end
  end
  if longest > 0 then
    redis.call('pexpire', KEYS[1], longest)
    return kept
  end
  if mode == 'write' then return kept end
end
redis.call('del', KEYS[1])
pub(KEYS[2], ARGV[3])
return 1`

// WriteRelease releases one write hold. The last one deletes the lock and publishes "1", or, when the owner still
// has read holds (downgrade), switches the lock to read mode and publishes "1" as well.
var WriteRelease = Script{
	Name: "rwlock.writerelease",
	Keys: []string{"lock name", rwChannelKey},
	Args: []string{"owner's write field (<owner>:write)", "expected write hold count (0 = any)",
		"lease in milliseconds, re-armed while write holds remain", "message (\"1\")", publishArg},
	Reply: "nil = the owner does not hold the write lock; 0 = one hold released, others remain; 1 = the write lock " +
		"released; -n = the owner holds n, not the count expected: nothing changed",
	Source: publishing(rwWriteReleaseLua),
}

const rwWriteReleaseLua = `if redis.call('hget', KEYS[1], 'mode') ~= 'write' then return nil end
` + holdCountLua + `if c > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  local ttl = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(ttl, tonumber(ARGV[3])))
  return 0
end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
pub(KEYS[2], ARGV[4])
return 1`

// RWRenew renews a batch of read-write lock holds in one call: write holds and read holds (the watchdog batches
// the renewals of the other locks with Renew). The lock's lease is never shortened: another reader's longer lease
// is kept. Only the owner's own read hold keys are renewed (Redisson renews every reader's, which keeps a dead
// reader's holds alive as long as any reader lives).
var RWRenew = Script{
	Name: "rwlock.renew",
	Keys: []string{"KEYS[i]: lock name of entry i"},
	Args: []string{"lease in milliseconds (watchdog timeout)",
		"ARGV[2i]: hash field of entry i: the owner (plain layout, or a reader), or <owner>:write (a writer)",
		"ARGV[2i+1]: a reader's hold-key prefix {name}:<owner>:rwlock_timeout, whose keys 1..count are renewed " +
			"too, else \"\""},
	Reply:  "a bulk string with one character per entry: '1' renewed, '0' the field is gone (lost)",
	Source: rwRenewLua,
}

const rwRenewLua = `local r = {}
local lease = tonumber(ARGV[1])
for i = 1, #KEYS do
  local c = redis.call('hget', KEYS[i], ARGV[2 * i])
  if c then
    if redis.call('pttl', KEYS[i]) < lease then
      redis.call('pexpire', KEYS[i], lease)
    end
    local p = ARGV[2 * i + 1]
    if p ~= '' then
      for j = 1, tonumber(c) do
        redis.call('pexpire', p .. ':' .. j, lease)
      end
    end
    r[i] = '1'
  else
    r[i] = '0'
  end
end
return table.concat(r)`

// RWForceUnlock deletes the lock, whoever holds it, when it is in the given mode, with the read holds' keys, and
// wakes every waiter: the force unlock of one half (Redisson's RedissonReadLock/RedissonWriteLock forceUnlock).
// Forcing the write lock leaves a lock in read mode alone, and the other way round (Redisson's read-write
// force-unlock test). Redisson finds the read holds' keys with KEYS, which scans the whole keyspace and cannot run
// on a cluster; here they are named from the hash: owner f's holds are KEYS[3]:f:rwlock_timeout:1..n.
var RWForceUnlock = Script{
	Name: "rwlock.forceunlock",
	Keys: []string{"lock name", rwChannelKey, rwHoldPrefixesKey},
	Args: []string{"the mode to force (\"read\" or \"write\")", "message (\"1\")", publishArg},
	Reply: "1 = the lock was in that mode and is deleted; 0 = it was not (free, or in the other mode): nothing " +
		"changed",
	Source: publishing(rwForceUnlockLua),
}

const rwForceUnlockLua = `if redis.call('hget', KEYS[1], 'mode') ~= ARGV[1] then return 0 end
for _, f in ipairs(redis.call('hkeys', KEYS[1])) do
  local n = tonumber(redis.call('hget', KEYS[1], f))
  if n and string.sub(f, -6) ~= ':write' then
    for i = 1, n do
      redis.call('del', KEYS[3] .. ':' .. f .. ':rwlock_timeout:' .. i)
    end
  end
end
redis.call('del', KEYS[1])
pub(KEYS[2], ARGV[2])
return 1`

// WriteUnlockMessage is what a write unlock (and a force unlock) publishes on a read-write lock's channel: every
// waiter may try, any number of readers may enter. A read unlock publishes UnlockMessage ("0"), which wakes one.
const WriteUnlockMessage = "1"

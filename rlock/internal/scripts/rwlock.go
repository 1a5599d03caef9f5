package rlock

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

// rwReadAcquireSrc takes one read hold.
//
//	KEYS[1] lock name
//	KEYS[2] the owner's hold-key prefix {name}:<owner>:rwlock_timeout
//	ARGV[1] lease in milliseconds
//	ARGV[2] owner
//	ARGV[3] owner's write field (<owner>:write)
//
// Reply: a bulk string = granted, the owner's read hold count (the index of the new hold key); an integer =
// refused, the lock's PTTL.
const rwReadAcquireSrc = `local mode = redis.call('hget', KEYS[1], 'mode')
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

// rwWriteAcquireSrc takes one write hold.
//
//	KEYS[1] lock name
//	ARGV[1] lease in milliseconds
//	ARGV[2] owner's write field (<owner>:write)
//	ARGV[3] owner (its read field)
//
// Reply: a bulk string = granted, the write hold count; an integer = refused, the lock's PTTL; the error
// "RWUPGRADE ..." = the owner holds a read hold and no write hold: it would wait for itself forever.
const rwWriteAcquireSrc = `local mode = redis.call('hget', KEYS[1], 'mode')
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

// rwReadReleaseSrc releases the owner's newest read hold (conditional on the expected count, like every release
// of this package). When other holds remain the lock's lease becomes the longest remaining read hold's; when none
// remains (only expired holds of gone readers) the lock is deleted and "0" published.
//
//	KEYS[1] lock name
//	KEYS[2] channel redisson_rwlock:{name}
//	KEYS[3] the owner's hold-key prefix {name}:<owner>:rwlock_timeout
//	KEYS[4] the hold-key prefix of every owner: {name} (an owner's keys are KEYS[4]:<owner>:rwlock_timeout:<n>)
//	ARGV[1] owner
//	ARGV[2] the read hold count the owner expects, or 0 for "whatever it is"
//	ARGV[3] message ("0")
//	last ARGV: the publish command (publishLua)
//
// Reply: nil = the owner holds no read hold; 0 = released, the lock remains (other holds); 1 = released and the
// lock deleted; -n = the owner holds n read holds, not the count expected: nothing changed; {0, ms} = released, the
// lock remains and so do n-1 read holds of the owner, the longest of which has ms milliseconds left (0 or less:
// they all expired): each read hold has its own lease, so the client's local end of the owner's read lock moves
// to that one's.
const rwReadReleaseSrc = publishLua + holdCountLua + `local own = nil
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

// rwWriteReleaseSrc releases one write hold. The last one deletes the lock and publishes "1", or, when the owner
// still has read holds (downgrade), switches the lock to read mode and publishes "1" as well.
//
//	KEYS[1] lock name
//	KEYS[2] channel redisson_rwlock:{name}
//	ARGV[1] owner's write field (<owner>:write)
//	ARGV[2] the write hold count the owner expects, or 0 for "whatever it is"
//	ARGV[3] lease in milliseconds, re-armed while write holds remain
//	ARGV[4] message ("1")
//	last ARGV: the publish command (publishLua)
//
// Reply: nil = the owner does not hold the write lock; 0 = one hold released, others remain; 1 = the write lock
// released; -n = the owner holds n, not the count expected: nothing changed.
const rwWriteReleaseSrc = publishLua + `if redis.call('hget', KEYS[1], 'mode') ~= 'write' then return nil end
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

// rwRenewSrc renews a batch of read-write lock holds in one call: write holds and read holds (the watchdog batches
// the renewals of the other locks with renewSrc).
//
//	KEYS[i]     lock name
//	ARGV[1]     lease in milliseconds (the watchdog timeout)
//	ARGV[2i]    the hash field of entry i: the owner (plain layout, or a reader), or <owner>:write (a writer)
//	ARGV[2i+1]  for a reader, its hold-key prefix {name}:<owner>:rwlock_timeout, whose keys 1..count are renewed
//	            too; "" otherwise
//
// Reply: a bulk string with one character per entry: '1' renewed, '0' the field is gone (lost). The lock's lease
// is never shortened: another reader's longer lease is kept. Only the owner's own read hold keys are renewed
// (Redisson renews every reader's, which keeps a dead reader's holds alive as long as any reader lives).
const rwRenewSrc = `local r = {}
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

// rwForceUnlockSrc deletes the lock, whoever holds it, when it is in the given mode, with the read holds' keys,
// and wakes every waiter: the force unlock of one half (Redisson's RedissonReadLock/RedissonWriteLock
// forceUnlock). Forcing the write lock leaves a lock in read mode alone, and the other way round (Redisson's
// read-write force-unlock test). Redisson finds the read holds' keys with KEYS, which scans the whole keyspace and
// cannot run on a cluster; here they are named from the hash: owner f's holds are KEYS[3]:f:rwlock_timeout:1..n.
//
//	KEYS[1] lock name
//	KEYS[2] channel redisson_rwlock:{name}
//	KEYS[3] the hold-key prefix of every owner: {name}
//	ARGV[1] the mode to force: "read" or "write"
//	ARGV[2] message ("1")
//	last ARGV: the publish command (publishLua)
//
// Reply: 1 = the lock was in that mode and is deleted; 0 = it was not (free, or in the other mode): nothing changed.
const rwForceUnlockSrc = publishLua + `if redis.call('hget', KEYS[1], 'mode') ~= ARGV[1] then return 0 end
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

// rwWriteUnlockMessage is what a write unlock (and a force unlock) publishes on the lock's channel: every waiter
// may try, any number of readers may enter. A read unlock publishes unlockMessage ("0"), which wakes one.
const rwWriteUnlockMessage = "1"

var (
	rwReadAcquireScript  = newScript(rwReadAcquireSrc)
	rwWriteAcquireScript = newScript(rwWriteAcquireSrc)
	rwReadReleaseScript  = newScript(rwReadReleaseSrc)
	rwWriteReleaseScript = newScript(rwWriteReleaseSrc)
	rwRenewScript        = newScript(rwRenewSrc)
	rwForceUnlockScript  = newScript(rwForceUnlockSrc)
)

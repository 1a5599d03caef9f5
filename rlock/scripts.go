package rlock

import "github.com/locksmith-go/locksmith/conn"

// The Lua scripts of the lock, in Redisson's keyspace (see the package documentation, "Wire format"):
//
//	lock      HASH <name>, field <clientUUID>:<ownerID> -> hold count, PEXPIRE = lease
//	channel   redisson_lock__channel:{<name>}, unlock message "0"
//
// They were written for this package from the semantics Redisson documents (create-or-reenter else PTTL; release:
// not owner -> nil, decrement, delete + publish at zero). Each operation is one EVALSHA: one round trip, atomic on
// the server. A Redisson client working on the same name sees exactly the hash and messages it would write itself,
// so Java and Go processes exclude and wake each other.
//
// Replies differ from Redisson's only where nobody but this package reads them (a Redisson client never reads a
// reply to our scripts):
//   - acquire answers a granted lock with the new hold count as a bulk string (Redisson: nil), so the client learns
//     the server's count even when the same owner also holds the lock through another client; a refused acquire
//     answers the holder's PTTL as an integer, as Redisson's does.
//   - release takes the hold count the owner expects (see below) and answers a mismatch with the negated count.

// acquireSrc creates the lock or re-enters it, else reports how long the current holder's lease still runs.
//
//	KEYS[1] lock name
//	ARGV[1] lease in milliseconds
//	ARGV[2] owner (<clientUUID>:<ownerID>)
//
// Reply: bulk string = granted, holding the owner's new hold count; integer = refused, the lock's PTTL in
// milliseconds (-1: the key has no expiry, set by something else than a lock client).
// Server work when granted: EXISTS, (HEXISTS,) HINCRBY, PEXPIRE; when refused: EXISTS, HEXISTS, PTTL.
const acquireSrc = `if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return tostring(n)
end
return redis.call('pttl', KEYS[1])`

// releaseSrc releases one hold: it decrements the owner's hold count, re-arms the lease while holds remain, and
// deletes the lock and publishes the unlock message when the last hold goes.
//
//	KEYS[1] lock name
//	KEYS[2] unlock channel (redisson_lock__channel:{name})
//	ARGV[1] owner
//	ARGV[2] the hold count the owner expects to find, or 0 for "whatever it is"
//	ARGV[3] lease in milliseconds, re-armed when holds remain
//	ARGV[4] unlock message ("0")
//	last ARGV: the publish command (publishLua)
//
// Reply: nil = the owner does not hold the lock; 0 = one hold released, others remain; 1 = released, the lock is
// deleted and the message published; a negative integer -n = the owner holds n, not the count expected: nothing
// was changed.
//
// Retry safety without a latch key. Redisson makes a retried unlock safe by writing a latch key
// (redisson_unlock_latch:{name}:<requestId>) with the result on every unlock and checking it first, which costs a
// GET and a SET PX per unlock and a short-lived key per unlock in memory. This script is made safe by its
// condition instead: the client sends the count it knows it holds, so a retry of an attempt that already ran finds
// count-1 (or no field at all) instead of the expected count and changes nothing. The scheme needs no extra key,
// and it is cheaper than Redisson's latch-free script too: HGET replaces HEXISTS, and the last hold is deleted
// without the HINCRBY. Measured server cost: see the package documentation, "Release and retries".
const releaseSrc = publishLua + holdCountLua + decrementLua + `redis.call('del', KEYS[1])
redis.call(publish, KEYS[2], ARGV[4])
return 1`

// publishLua is the prelude of every script that publishes. The publish command is the script's last argument:
// PUBLISH, or SPUBLISH on a Redis Cluster with sharded pub/sub, as conn.Client.PublishCommand says (and as
// Redisson passes it to its scripts), so that the messages reach the subscribers of this package and Redisson's
// alike in every topology. The prelude takes it off ARGV, so that the other arguments read as each script
// documents them. Client.pub is the one place the command is chosen.
const publishLua = "local publish = table.remove(ARGV)\n"

// The parts every kind's release shares (the plain, fair and read-write locks' scripts are built from them).

// holdCountLua opens a conditional release: it reads the owner's (ARGV[1]) hold count in KEYS[1] into c, answers
// nil when the owner holds nothing there, then checks the count as expectCountLua does.
const holdCountLua = `local c = redis.call('hget', KEYS[1], ARGV[1])
if not c then return nil end
` + expectCountLua

// expectCountLua is the condition that makes a release safe to send again: when the owner's count c is not the
// one the client expects (ARGV[2]; 0 = any), it answers -c and changes nothing.
const expectCountLua = `c = tonumber(c)
local e = tonumber(ARGV[2])
if e > 0 and c ~= e then return -c end
`

// decrementLua releases one of several holds: the count goes down and the lease (ARGV[3]) is re-armed.
const decrementLua = `if c > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  redis.call('pexpire', KEYS[1], ARGV[3])
  return 0
end
`

// handoffSrc releases the owner's last hold and grants the lock to the next owner in the same step, so the lock
// goes from one local holder to the next local waiter in one round trip and is never free in between (so no unlock
// message is published: nobody could acquire it anyway).
//
//	KEYS[1] lock name
//	KEYS[2] unlock channel
//	ARGV[1..4] as release: owner, expected hold count (0 = any), lease, unlock message
//	ARGV[5] next owner
//	ARGV[6] next owner's lease in milliseconds
//
// Reply: a two-element array {release, grant}. release is as releaseSrc's reply; when it is 0 or negative the
// owner still holds the lock and no grant was attempted (grant is nil). grant is a bulk string with the next
// owner's hold count when the next owner holds the lock, or an integer PTTL when the lock is held by someone else
// (possible only when the releasing owner had lost it).
//
// The grant is idempotent: when the next owner already holds the lock it is not counted again, only its lease is
// re-armed. With the conditional release this makes the whole script safe to retry after an ambiguous failure.
// The message is not published when the lock went straight to the next owner; when the releasing owner no longer
// held it, nothing is released and nothing published either.
const handoffSrc = `local rel = false
local c = redis.call('hget', KEYS[1], ARGV[1])
if c then
  c = tonumber(c)
  local e = tonumber(ARGV[2])
  if e > 0 and c ~= e then return {-c, false} end
  if c > 1 then
    redis.call('hincrby', KEYS[1], ARGV[1], -1)
    redis.call('pexpire', KEYS[1], ARGV[3])
    return {0, false}
  end
  redis.call('del', KEYS[1])
  rel = 1
else
  local n = redis.call('hget', KEYS[1], ARGV[5])
  if n then
    redis.call('pexpire', KEYS[1], ARGV[6])
    return {rel, n}
  end
  if redis.call('exists', KEYS[1]) == 1 then
    return {rel, redis.call('pttl', KEYS[1])}
  end
end
redis.call('hset', KEYS[1], ARGV[5], 1)
redis.call('pexpire', KEYS[1], ARGV[6])
return {rel, '1'}`

// deletePublishSrc deletes a key and, when it existed, publishes a message: the force unlock of the plain, fenced
// and read-write locks (whoever holds them; messages "0" and "1", which wakes every waiter of a read-write lock)
// and a latch's Delete ("1": awaiters look again). The fair lock's force unlock wakes its head instead.
//
//	KEYS[1] the key (lock, latch)
//	KEYS[2] its channel
//	ARGV[1] the message
//	last ARGV: the publish command (publishLua)
//
// Reply: 1 = the key existed and was deleted; 0 = there was none.
const deletePublishSrc = publishLua + `if redis.call('del', KEYS[1]) == 1 then
  redis.call(publish, KEYS[2], ARGV[1])
  return 1
end
return 0`

// renewSrc renews the leases of up to RenewBatchSize locks held by their owners, in one call. The watchdog batches
// every renewal that falls due together on one server into one EVALSHA (DESIGN: "coalesced into one EVALSHA per
// node ... returning per-key results").
//
//	KEYS[i]   lock name
//	ARGV[1]   lease in milliseconds (the watchdog timeout)
//	ARGV[i+1] owner of KEYS[i]
//
// Reply: a bulk string with one character per key, in order: '1' = renewed, '0' = the owner no longer holds that
// lock (it expired, was force-unlocked or taken by someone else). One string instead of an array of integers keeps
// the reply of a full batch to about a hundred bytes, decoded without an element per key.
const renewSrc = `local r = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    r[i] = '1'
  else
    r[i] = '0'
  end
end
return table.concat(r)`

// statusSrc reads a lock's key in one step, so that the owners and the TTL it reports belong to the same moment.
//
//	KEYS[1] lock name
//
// Reply: {type, PTTL} for a key that is not a hash (type "none" when there is no key), {"hash", PTTL, HGETALL}
// for a hash.
const statusSrc = `local t = redis.call('type', KEYS[1]).ok
if t ~= 'hash' then return {t, redis.call('pttl', KEYS[1])} end
return {t, redis.call('pttl', KEYS[1]), redis.call('hgetall', KEYS[1])}`

// unlockMessage is the payload Redisson publishes on a lock's channel when the lock is released
// (LockPubSub.UNLOCK_MESSAGE).
const unlockMessage = "0"

// The scripts as EVALSHA-ready values: SHA-1 computed once, NOSCRIPT handled by conn.
var (
	acquireScript       = conn.NewScript(acquireSrc)
	releaseScript       = conn.NewScript(releaseSrc)
	handoffScript       = conn.NewScript(handoffSrc)
	deletePublishScript = conn.NewScript(deletePublishSrc)
	renewScript         = conn.NewScript(renewSrc)
	statusScript        = conn.NewScript(statusSrc)
)

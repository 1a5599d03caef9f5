package scripts

// The fenced lock's scripts, in Redisson's keyspace (RedissonFencedLock): the plain lock's HASH, channel and queue
// (lock.go), plus
//
//	token  STRING redisson_lock_token:{<name>}, INCR'd by every acquire, re-entry included
//
// Redisson's lockAndGetToken(leaseTime) drops the lease and takes the watchdog; here every acquire form applies the
// lease it is given. The fenced lock releases and force-unlocks with the plain lock's scripts (LockRelease,
// DeletePublish): same hash, same channel.

// FencedLockAcquire is the plain lock's acquire (LockAcquire: the same hash, queue and grant channel, so fenced
// and plain waiters of one name queue together) whose every grant, re-entry included, also increments the token
// in the same step: no two grants can ever share a token, and a later grant always has a larger one. A fenced
// waiter is queued with a 'w' entry: a release wakes it instead of granting it, and its own attempt takes the lock
// and its token.
//
// The token counter outlives restarts only as far as the server's persistence does. When it is missing (never
// written, or lost with a server restarted without persistence), it is seeded from the server's clock in
// microseconds (TIME) before the increment: as long as that clock moves forward between the last grant before a
// loss and the first one after it, and fewer than a million grants a second ever come (Redis runs far fewer
// scripts than that), every token after the loss is larger than every token before it. Redisson starts from 1;
// a Redisson client sharing the counter increments whatever it holds, so both stay monotonic together.
var FencedLockAcquire = Script{
	Name:   "fencedlock.acquire",
	Keys:   append(append([]string(nil), plainKeys...), "token key (redisson_lock_token:{name})"),
	Args:   LockAcquire.Args,
	Reply:  "an array {hold count, token} = granted; an integer = refused, as LockAcquire's",
	Source: queuedAcquire(fencedGrantLua, fencedGrantLua),
}

// fencedGrantLua grants (or re-enters) the lock for ARGV[2] with the next token, seeding a missing counter from the
// server's clock.
const fencedGrantLua = `if redis.call('exists', KEYS[5]) == 0 then
  redis.replicate_commands()
  local t = redis.call('time')
  redis.call('set', KEYS[5], t[1] .. string.format('%06d', tonumber(t[2])))
end
local token = redis.call('incr', KEYS[5])
local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return {n, token}`

package scripts

// What the scripts of several kinds share: the publish prelude, the parts of a conditional release, and the
// scripts that serve more than one kind (delete-and-publish, renew, status).

// publishLua is the prelude of every script that publishes. The publish command is the script's last argument:
// PUBLISH, or SPUBLISH on a Redis Cluster with sharded pub/sub, as conn.Client.PublishCommand says (and as
// Redisson passes it to its scripts), so that the messages reach the subscribers of rlock and Redisson's alike in
// every topology. The prelude takes it off ARGV, so that the other arguments read as each script documents them.
//
// Scripts publish with pub(channel, message), never with redis.call: a refused PUBLISH (a Redis user without the
// channel's permission, or without +publish) raised inside redis.call would abort the script after its writes took
// effect — a release that deleted the lock would answer an error, and the caller would report a release that
// happened as a failure. pub runs it with redis.pcall and records the refusal instead, so that the script finishes
// what it does; publishing wraps the script so that its reply then says so (see publishRefusedLua).
const publishLua = publishCommandLua + publishRestLua

// publishCommandLua takes the publish command off ARGV (the first line of every publishing script); publishRestLua
// is the rest of the prelude, which makes pub. A fast path (publishingFast) runs between the two.
const (
	publishCommandLua = `local publish = table.remove(ARGV)
`
	publishRestLua = `local refused = nil
local function pub(ch, msg)
  local r = redis.pcall(publish, ch, msg)
  if type(r) == 'table' and r.err then
    refused = refused or {}
    refused[#refused + 1] = ch
    refused[#refused + 1] = msg
    refused.err = r.err
  end
end
`
)

// serverMillisLua is the server's clock in Unix milliseconds, read from t, the reply of a TIME the script made
// (seconds, microseconds): the clock every deadline of the scripts is kept on.
const serverMillisLua = `tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`

// PublishRefusedMarker opens the reply of a script whose pub was refused (publishRefusedLua).
const PublishRefusedMarker = "locksmith:publish-refused"

// publishRefusedLua ends a publishing script as publishing wraps it: the script's own body runs as the function
// script(); when a message was refused, its reply becomes {marker, {reply}, error, channel1, message1, ...} —
// the script's reply (a nil reply as an empty array) and what was refused — so that the client acts on the reply
// as ever and learns of the refusal. An error reply is left as it is. The commands the script runs, and so its
// server cost, are unchanged: pub sends the PUBLISH it would send with redis.call.
const publishRefusedLua = `
end
local reply = script()
if refused and not (type(reply) == 'table' and reply.err) then
  local out = {'` + PublishRefusedMarker + `', {reply}, refused.err}
  for i = 1, #refused do out[#out + 1] = refused[i] end
  return out
end
return reply
`

// publishing returns the source of a script that publishes with pub: the prelude (publishLua), body as the
// function script(), and the ending that reports a refused message in the reply (publishRefusedLua).
func publishing(body string) string {
	return publishLua + "local function script()\n" + body + publishRefusedLua
}

// publishingFast is publishing with a fast path: fast runs first, before the prelude makes pub and the script's
// body becomes a function — two closures every run of the script would otherwise make, which an uncontended
// acquire or release pays for without needing them (about a fifth of a microsecond of server time per script).
// fast may answer (return); it publishes only with fastPublishLua. When it falls through, body runs as
// publishing's does, and may read the locals fast declared.
func publishingFast(fast, body string) string {
	return publishCommandLua + fast + publishRestLua + "local function script()\n" + body + publishRefusedLua
}

// fastPublishLua publishes message on channel (Lua expressions) and answers reply, from a fast path: without pub,
// it reports a refused message in the reply the way publishRefusedLua does.
func fastPublishLua(channel, message, reply string) string {
	return `local r = redis.pcall(publish, ` + channel + `, ` + message + `)
if type(r) == 'table' and r.err then
  return {'` + PublishRefusedMarker + `', {` + reply + `}, r.err, ` + channel + `, ` + message + `}
end
return ` + reply + `
`
}

// publishArg describes the last argument of every script that publishes.
const publishArg = "publish command: publish (spublish on a cluster with sharded pub/sub)"

// UnlockMessage is the payload Redisson publishes on a lock's channel when the lock is released
// (LockPubSub.UNLOCK_MESSAGE).
const UnlockMessage = "0"

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

// DeletePublish deletes a key and, when it existed, publishes a message: the force unlock of the plain, fenced
// and read-write locks (whoever holds them; messages "0" and "1", which wakes every waiter of a read-write lock)
// and a latch's Delete ("1": awaiters look again). The fair lock's force unlock wakes its head instead.
var DeletePublish = Script{
	Name:   "lock.forceunlock",
	Keys:   []string{"key (lock, latch)", "its channel"},
	Args:   []string{"message", publishArg},
	Reply:  "1 = the key existed and was deleted; 0 = there was none",
	Source: publishing(deletePublishLua),
}

const deletePublishLua = `if redis.call('del', KEYS[1]) == 1 then
  pub(KEYS[2], ARGV[1])
  return 1
end
return 0`

// Renew renews the leases of a batch of locks held by their owners, in one call: the watchdog coalesces every
// renewal that falls due together on one server into one EVALSHA per node, returning a result per key. The
// read-write lock's holds are renewed by RWRenew.
var Renew = Script{
	Name: "lock.renew",
	Keys: []string{"KEYS[i]: lock name of entry i"},
	Args: []string{"lease in milliseconds (watchdog timeout)", "ARGV[i+1]: owner of KEYS[i]"},
	Reply: "a bulk string with one character per key, in order: '1' = renewed, '0' = the owner no longer holds " +
		"that lock (it expired, was force-unlocked or taken by someone else). One string instead of an array of " +
		"integers keeps the reply of a full batch to about a hundred bytes, decoded without an element per key",
	Source: renewLua,
}

const renewLua = `local r = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    r[i] = '1'
  else
    r[i] = '0'
  end
end
return table.concat(r)`

// Status reads a lock's key in one step, so that the owners and the TTL it reports belong to the same moment.
var Status = Script{
	Name: "lock.status",
	Keys: []string{"lock name"},
	Reply: "{type, PTTL} for a key that is not a hash (type \"none\" when there is no key), " +
		"{\"hash\", PTTL, HGETALL} for a hash",
	Source: statusLua,
}

const statusLua = `local t = redis.call('type', KEYS[1]).ok
if t ~= 'hash' then return {t, redis.call('pttl', KEYS[1])} end
return {t, redis.call('pttl', KEYS[1]), redis.call('hgetall', KEYS[1])}`

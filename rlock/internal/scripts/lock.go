package scripts

import (
	"strconv"
	"time"
)

// The plain lock's scripts. The lock itself is Redisson's: they were written from the semantics Redisson documents
// (create-or-reenter else PTTL; release: not owner -> nil, decrement, delete + publish at zero), so that Java and
// Go processes exclude and wake each other. Beside it, in its hash slot, rlock keeps a queue of the waiters of
// every client, so that a release passes the lock to the waiter that came first, whichever process it lives in,
// in the same step:
//
//	lock      HASH <name>, field <clientUUID>:<ownerID> -> hold count, PEXPIRE = lease (Redisson's)
//	channel   redisson_lock__channel:{<name>}, unlock message "0" (Redisson's)
//	queue     LIST locksmith_lock_queue:{<name>}: waiting entries, first come first served
//	deadlines ZSET locksmith_lock_timeout:{<name>}: entry -> the instant (Unix ms, server clock) after which it
//	          counts as gone; also the members ':chain' (since when hand-overs through the queue have kept the
//	          lock taken) and ':gap' (until when the lock is left to clients that do not queue)
//	grants    channel locksmith_lock__channel:{<name>}:<clientUUID>, one per client: "g<nonce>" says that the
//	          waiter <nonce> of that client holds the lock now, "w<nonce>" that it should attempt now
//
// A queue entry is "<kind><lease>:<nonce>:<owner>": kind 'g' for a waiter the lock may be granted to by someone
// else's script (the release, or another client's attempt that finds the lock free), with that lease in
// milliseconds; kind 'w' for a waiter that must take the lock with its own attempt (a fenced lock's waiter needs
// its token from its own script; with Config.SyncReplicas every grant must be followed by WAIT), which is only
// woken. nonce is unique per call within its client, so a message can never be mistaken for another call's.
//
// Every script names the four keys (lock, queue, deadlines, unlock channel) in this order, so that a Redis Cluster
// and any proxy route them together and redirect them together while their slot migrates; they share the lock's
// hash tag (rlock's plainKeys says why the channel is among them). The grant channels' prefix is derived from the
// queue's name (grantPrefixLua), which keeps every EVALSHA to the strings it needs (each costs the server a string
// to parse and hand to Lua, a cost the uncontended pair of scripts feels).
//
// A waiter's queue arguments travel in one string, its spec "<kind><lease>:<flag>:<nonce>": the entry's kind and
// lease, a flag (the acquire's claim flag; the release's preference for its next waiter) and the nonce, empty when
// it is the owner's id. Only the contended paths parse it.
//
// The uncontended path stays what it was: an acquire that finds neither lock nor queue, and a release that finds
// neither queue nor deadline set, run no other command than Redisson's script would (one EXISTS more each).
//
// The replies differ from Redisson's where only rlock reads them: the acquire answers a granted lock with the new
// hold count as a bulk string (Redisson: nil), so that the client learns the server's count even when the same
// owner also holds the lock through another client; the release takes the hold count the owner expects and
// answers a mismatch with the negated count (see LockRelease).

// queueClockLua defines the functions the queued paths share. clock() reads the server's time in Unix
// milliseconds once per script (TIME, under effects replication: see the fair lock's scripts), live() drops from
// the head of the queue every entry whose deadline passed and returns the first live one (nil when none is left);
// a waiter that becomes the head so while the lock is held is nudged (nudge: told to attempt), so that it learns
// it is the head and waits for the lock's expiry, not only for its refresh.
// When the queue empties (emptied), the grant records that may remain in the deadline set (see queueHandOverLua)
// expire with it after markerMillis unless the queue fills again first (an entry queued into an empty queue makes
// the set persistent again); the ':gap' member goes too, and ':chain' unless the lock is taken. A run of hand-overs
// does not end because the queue emptied while the lock passed on — two processes taking turns empty and refill it
// at every hand-over — but when the lock is free: a release that frees it removes ':chain' (releaseLua's paths, and
// passOn's), and so does a script that finds it free (expired, or freed by a Redisson client) before serving the
// head. A release that finds neither queue nor deadline set is Redisson's and has nothing to remove.
var queueClockLua = `local now
local function clock()
  if not now then
    redis.replicate_commands()
    local t = redis.call('time')
    now = ` + serverMillisLua + `
  end
  return now
end
local function emptied()
  if redis.call('exists', KEYS[1]) == 0 then
    redis.call('zrem', KEYS[3], ':chain', ':gap')
  else
    redis.call('zrem', KEYS[3], ':gap')
  end
  if redis.call('exists', KEYS[3]) == 1 then
    redis.call('pexpire', KEYS[3], ` + markerMillis + `)
  end
end
local function parse(e)
  local k, l, n, o = string.match(e, '^([gw])(%d+):(%d+):(.+)$')
  return k, l, n, o, string.match(o, '^(.*):')
end
local function nudge(e)
  local k, l, n, o, u = parse(e)
  pub(` + grantPrefixLua + ` .. ':' .. u, 'w' .. n)
end
local function live()
  clock()
  local dropped = false
  while true do
    local e = redis.call('lindex', KEYS[2], 0)
    if not e then
      emptied()
      return nil
    end
    local d = redis.call('zscore', KEYS[3], e)
    if d and tonumber(d) > now and string.match(e, '^[gw]%d+:%d+:.+:') then
      if dropped and redis.call('exists', KEYS[1]) == 1 then nudge(e) end
      return e
    end
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], e)
    dropped = true
  end
end
local function dequeue(e)
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], e)
  if redis.call('llen', KEYS[2]) == 0 then emptied() end
end
`

// queueHandOverLua defines handOver(e, mine): the lock is free and e is the live head of the queue. A 'g' entry is
// granted the lock (hold count 1, its lease) and leaves the queue; a 'w' entry stays and is told to attempt. The
// entry's client is told on its grant channel — unless it is mine (the client running the script, which learns it
// from the reply) and granted: then nothing is published. It returns whether the lock was granted, and the entry's
// nonce when it went to a waiter of mine (else false). A grant to an entry whose nonce is not its owner's id (an
// owner that other calls may share) is recorded as the member ':g:<owner>' of the deadline set, scored with the
// nonce, so that a hold of that owner can later be told to be this grant (grantedLua). A record written while the
// queue is empty (the grantee was its last entry) expires with the set after markerMillis (recordGrantLua).
var queueHandOverLua = `local function grant(o, l, n)
  redis.call('hset', KEYS[1], o, 1)
  redis.call('pexpire', KEYS[1], l)
  if n ~= string.match(o, ':([^:]*)$') then
` + recordGrantLua + `
  end
end
local function handOver(e, mine)
  local k, l, n, o, u = parse(e)
  if k == 'g' then
    grant(o, l, n)
    dequeue(e)
    if u == mine then return true, n end
  end
  pub(` + grantPrefixLua + ` .. ':' .. u, k .. n)
  return k == 'g', false
end
`

// queuePassOnLua defines passOn(mine, nxt): the last hold of the lock was just released by a client whose UUID is
// mine ("" for none). nxt, when the releasing client names one, is its own first waiter, which it may not have
// queued on the server ({o = owner, l = lease, n = nonce, e = entry}). The lock goes to the head of the queue
// (handOver) without ever being free; with nobody live queued, to nxt, directly; with neither, it is deleted and
// the unlock message published (Redisson's release). nxt.prefer grants nxt before the head (the releasing client's
// run of local grants, which the client bounds). When hand-overs through the queue have kept the lock taken for
// RunBound, it is deleted and published instead, and left for RunGap to clients that do not queue (a Redisson
// client on the same name, woken by the unlock message), so that they are never starved by a queue that never
// empties; the head is told to attempt, and gets it when the gap ends if nobody else took it. A run counts every
// hand-over from its first until the lock is free, direct grants between them included (queueClockLua says when
// it ends). (A client's own run of direct grants, outside the queue, is bounded the same way by the client.)
// Returns the grantee's nonce (a string) when the lock went to a waiter of mine, 2 when it went to a waiter of
// another client, else 1.
var queuePassOnLua = `local function passOn(mine, nxt)
  local head = live()
  if nxt and nxt.prefer then
    redis.call('lrem', KEYS[2], 1, nxt.e)
    head = nil
  end
  if not head then
    redis.call('del', KEYS[1])
    if nxt then
      redis.call('zrem', KEYS[3], nxt.e)
      grant(nxt.o, nxt.l, nxt.n)
      return nxt.n
    end
    redis.call('zrem', KEYS[3], ':chain')
    pub(` + unlockChannelLua + `, '0')
    return 1
  end
  local chain = redis.call('zscore', KEYS[3], ':chain')
  if not chain then
    redis.call('zadd', KEYS[3], now, ':chain')
  elseif now - tonumber(chain) >= ` + chainMillis + ` then
    redis.call('del', KEYS[1])
    redis.call('zrem', KEYS[3], ':chain')
    redis.call('zadd', KEYS[3], now + ` + gapMillis + `, ':gap')
    pub(` + unlockChannelLua + `, '0')
    local k, l, n, o, u = parse(head)
    pub(` + grantPrefixLua + ` .. ':' .. u, 'w' .. n)
    return 1
  end
  redis.call('del', KEYS[1])
  local granted, nonce = handOver(head, mine)
  if nonce then return nonce end
  if granted then return 2 end
  return 1
end
`

// recordGrantLua records the grant of the lock to owner o under nonce n (':g:<o>', scored n) in the deadline set.
// When the queue is empty (its last entry was the grantee, or nobody queued), the set is given markerMillis to
// live, as an emptied queue's set is (emptied): otherwise a record that its grantee never claims (it learnt of the
// grant from the release's reply) and that no release of the queue path takes out would stay forever, in a key
// without expiry.
var recordGrantLua = `    redis.call('zadd', KEYS[3], n, ':g:' .. o)
    if redis.call('exists', KEYS[2]) == 0 then
      redis.call('pexpire', KEYS[3], ` + markerMillis + `)
    end`

// QueueLiveness is how long a queue entry lives without being refreshed: a waiter refreshes its entry by
// attempting again (rlock does so every third of it at least), and the entry of a waiter whose process died is
// dropped by the next script that finds it at the head once the window has passed.
const QueueLiveness = 5 * time.Second

// The fairness bound for clients that do not queue (see queuePassOnLua): a run of hand-overs through the queue
// ends after RunBound, and the lock is then left for RunGap to whoever takes it. A gap costs the queue's waiters
// at most RunGap per RunBound of uninterrupted contention (0.5 %). rlock bounds a client's own uninterrupted run of
// direct grants to its waiters by the same two.
const (
	RunBound = time.Second
	RunGap   = 5 * time.Millisecond
)

// The timing constants as the scripts read them, in milliseconds. markerMillis is how long the deadline set
// outlives an emptied queue: its grant records are needed until the grantee claims the grant or leaves, within a
// liveness window, twice QueueLiveness.
var (
	queueLivenessMillis = millis(QueueLiveness)
	markerMillis        = millis(2 * QueueLiveness)
	chainMillis         = millis(RunBound)
	gapMillis           = millis(RunGap)
)

// millis formats d as whole milliseconds, as the scripts read durations.
func millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// QueuedNotHead is the reply of an acquire attempt that was refused and is queued behind another waiter: it will
// be granted or told to attempt on its client's grant channel, and keeps its entry alive by attempting again at
// its refresh interval. A refused head gets the lock's PTTL instead (its bound: a lock that expires publishes
// nothing), and a refused try its PTTL as ever.
const QueuedNotHead = -3

// A waiter that was queued (its claim flag "1") and whose attempt finds its entry gone — granted the lock meanwhile
// (the grant's lease then ended unclaimed, or its hold was taken away), or dropped after the liveness window — is
// queued again at the tail and told so: RequeuedNotHead behind another waiter, RequeuedHeadBase minus its bound (a
// PTTL of at least -2, so the reply is at most RequeuedHeadBase+2) as the head. A grant message its client receives
// afterwards may then announce the grant that ended before this attempt ran, not a new one: the client must claim
// it by another attempt rather than take it.
const (
	RequeuedNotHead  = -4
	RequeuedHeadBase = -7
)

// The names of the plain lock's queue keys (the queue of entries, their deadlines) and the prefix of its clients'
// grant channels, kept beside the lock in its hash slot. They are rlock's own (a Redisson client neither reads nor
// writes them), hence their prefix.
const (
	LockQueuePrefix   = "locksmith_lock_queue"
	LockTimeoutPrefix = "locksmith_lock_timeout"
	LockGrantPrefix   = "locksmith_lock__channel" // + ":<clientUUID>": a client's grant channel
)

// The names of a lock's channels in Lua: the unlock channel (declared: KEYS[4]), and the prefix of the clients'
// grant channels (each client's is the prefix, ':' and its UUID), derived from the queue's name (KEYS[2]), with
// which it shares the tail ":{<name>}" (":<name>" for a name that has braces: Redisson's prefixName).
const (
	unlockChannelLua = `KEYS[4]`
	grantPrefixLua   = `('` + LockGrantPrefix + `' .. string.sub(KEYS[2], #'` + LockQueuePrefix + `' + 1))`
)

// specPattern parses a waiter's spec (see above) into its entry kind and lease, its flag and its nonce.
const specPattern = `'^([gw]%d+):([01]):(%d*)$'`

// plainKeys describes the four keys every plain-lock script takes, in this order.
var plainKeys = []string{"lock name", "queue (" + LockQueuePrefix + ":{name})",
	"queue deadlines (" + LockTimeoutPrefix + ":{name})", "unlock channel (redisson_lock__channel:{name})"}

// LockAcquire creates or re-enters the lock; otherwise it queues the caller (or refreshes its entry) and says how
// long to wait at most. The lock is only taken when it is free and nobody live is queued, or the caller is the
// head: a waiter never barges past the queue. A free lock whose head is another waiter is handed to that waiter
// (or the waiter is woken) on the way, so a waiter whose wake-up was lost, or a lock that expired, never leaves the
// queue stuck longer than the next attempt of anyone. An entry that no attempt refreshed for QueueLiveness is
// dropped.
//
// A waiter's spec carries the claim flag "1" once it has been queued: a hold of the owner that is the grant made
// to its entry while it waited (grantedLua) is then claimed — its lease re-armed, its count reported — instead of
// re-entered; a hold of the owner that is not, because another call shares the owner, is re-entered, and the entry
// leaves the queue. The nonce is "" when it is the owner's id (an owner made for the call).
var LockAcquire = Script{
	Name: "lock.acquire",
	Keys: plainKeys,
	Args: []string{"lease in milliseconds", "owner (<clientUUID>:<ownerID>)",
		"waiter's spec: \"\" for a try without waiting, never queued (what a caller outside rlock sends); " +
			"rlock's waiters send \"<kind><lease>:<claim>:<nonce>\": their queue entry's kind and lease, \"1\" once " +
			"queued (a grant made meanwhile is then claimed), and the entry's nonce (\"\" = the owner's id)",
		publishArg},
	Reply: "a bulk string = granted, holding the owner's hold count. An integer = refused: the lock's PTTL (-1: a " +
		"key without expiry, -2: none) for a try and for the head of the queue (or the time left of a gap), -3 " +
		"(QueuedNotHead) for a waiter queued behind the head; for a waiter whose claim flag is \"1\" and whose " +
		"entry was gone, queued again: -4 (RequeuedNotHead) behind the head, -7 (RequeuedHeadBase) minus the " +
		"bound as the head",
	Source: queuedAcquire(lockGrantLua, lockClaimLua),
}

// lockGrantLua grants (or re-enters) the lock for ARGV[2] and answers the new hold count; lockClaimLua claims a
// grant made to the caller's queue entry while it waited, answering the count granted.
const (
	lockGrantLua = `local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return tostring(n)`
	lockClaimLua = `redis.call('pexpire', KEYS[1], ARGV[1])
return redis.call('hget', KEYS[1], ARGV[2])`
)

// callerSpecLua parses the caller's spec ARGV[3] into kind, claim and nonce (all nil for a try, or a spec that does
// not parse, which is treated as one) and builds its queue entry from them and the owner ARGV[2].
const callerSpecLua = `local kind, claim, nonce = string.match(ARGV[3], ` + specPattern + `)
local entry = kind and (kind .. ':' .. (nonce ~= '' and nonce or string.match(ARGV[2], ':([^:]*)$')) .. ':' .. ARGV[2])
`

// grantedLua is true when a hold of the owner ARGV[2] (it has one) is the grant made to the caller's entry: the
// entry is no longer queued, and the owner is the call's own (nonce empty: nobody else can hold anything under it)
// or the last grant to the owner was made to this very entry (its ':g:' record, which it takes).
const grantedLua = `(not redis.call('zscore', KEYS[3], entry) and (nonce == '' or
  (tonumber(redis.call('zscore', KEYS[3], ':g:' .. ARGV[2]) or -1) == tonumber(nonce) and
  redis.call('zrem', KEYS[3], ':g:' .. ARGV[2]) == 1)))`

// joinTailLua is the first attempt of a waiter (claim flag "0") that finds both the lock and a queue: it joins the
// queue's tail and is told QueuedNotHead, in five commands and without the closures of the queued path — what every
// process that comes back for the lock it just released runs, while the next holder's commands wait behind it on
// the server. It does not look at the head, which may be an entry whose waiter died: a waiter that would have been
// the head once that entry was dropped learns it by its next attempt (a refresh, which takes the queued path),
// within one refresh interval, as a waiter learns it after a hand-over to the waiter before it; a release serves
// the live head whatever the new entry was told. An entry already queued (a first attempt whose reply was lost)
// falls through to the queued path, which refreshes it.
var joinTailLua = `  redis.replicate_commands()
  local t = redis.call('time')
  local deadline = ` + serverMillisLua + ` + ` + queueLivenessMillis + `
  if redis.call('zadd', KEYS[3], 'NX', deadline, entry) == 1 then
    redis.call('rpush', KEYS[2], entry)
    return ` + strconv.Itoa(QueuedNotHead) + `
  end`

// queuedAcquire builds an acquire of the plain layout with the queue (LockAcquire, and the fenced lock's): grant
// is the Lua that grants or re-enters the lock for the owner ARGV[2] and returns the granted reply; claim the Lua
// that returns the reply for a hold claimed (see LockAcquire). Extra keys a kind needs follow KEYS[4]. Its fast
// path, an acquire that finds neither lock nor queue, runs Redisson's commands and one EXISTS, before anything of
// the queue or of publishing is set up (publishingFast). The queued path counts its commands too, as every
// cross-process grant pays for them: one PTTL tells a free lock and the bound, and a new entry learns from RPUSH's
// length whether it is the head, and makes the deadline set persistent only when it is the queue's first (the set
// is given an expiry only while the queue is empty: emptied, recordGrantLua).
func queuedAcquire(grant, claim string) string {
	return publishingFast(`local taken = redis.call('exists', KEYS[1], KEYS[2])
if taken == 0 then
`+grant+`
end
`, callerSpecLua+`if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  if claim == '1' then
    if `+grantedLua+` then
`+claim+`
    end
    redis.call('lrem', KEYS[2], 0, entry)
    redis.call('zrem', KEYS[3], entry)
  end
`+grant+`
elseif not entry and (taken == 2 or redis.call('exists', KEYS[2]) == 0) then
  return redis.call('pttl', KEYS[1])
elseif taken == 2 and claim == '0' then
`+joinTailLua+`
end
`+queueClockLua+queueHandOverLua+`local head = live()
local bound = redis.call('pttl', KEYS[1])
if bound == -2 then
  bound = nil
  local gap = tonumber(redis.call('zscore', KEYS[3], ':gap') or 0)
  if gap > now then
    bound = gap - now
  else
    redis.call('zrem', KEYS[3], ':chain')
    if not head or head == entry then
      if head then dequeue(head) end
`+grant+`
    end
    handOver(head, '')
  end
end
bound = bound or redis.call('pttl', KEYS[1])
if not entry then return bound end
if redis.call('zadd', KEYS[3], now + `+queueLivenessMillis+`, entry) == 1 then
  local behind = redis.call('rpush', KEYS[2], entry) > 1
  if not behind then redis.call('persist', KEYS[3]) end
  if claim == '1' then
    if behind then return `+strconv.Itoa(RequeuedNotHead)+` end
    return `+strconv.Itoa(RequeuedHeadBase)+` - bound
  end
  if behind then return `+strconv.Itoa(QueuedNotHead)+` end
  return bound
end
if redis.call('lindex', KEYS[2], 0) == entry then return bound end
return `+strconv.Itoa(QueuedNotHead))
}

// LockRelease releases one hold: it decrements the owner's hold count and re-arms the lease while holds remain;
// the last hold's release passes the lock on (queuePassOnLua): to the head of the queue in the same step, or to
// the releasing client's own next waiter, or, with nobody waiting, by deleting it and publishing the unlock
// message ("0", Redisson's).
//
// rlock may send two more arguments before the publish command (Args lists those a caller outside rlock sends):
// the releasing client's next waiter, its owner and its spec "<kind><lease>:<prefer>:<nonce>", which is granted
// the lock when nobody live is queued, or before the head of the queue when prefer is "1" (the client's bounded run
// of local grants); the reply then names that waiter's nonce.
//
// Retry safety without a latch key. Redisson makes a retried unlock safe by writing a latch key
// (redisson_unlock_latch:{name}:<requestId>) with the result on every unlock and checking it first, which costs a
// GET and a SET PX per unlock and a short-lived key per unlock in memory. This script is made safe by its
// condition instead: the client sends the count it knows it holds, so a retry of an attempt that already ran finds
// count-1 (or no field at all: the lock was deleted or granted to the next waiter) instead of the expected count
// and changes nothing; a retry that finds the named next waiter holding the lock reports that grant again. The
// scheme needs no extra key, and it is cheaper than Redisson's latch-free script too: HGET replaces HEXISTS, and
// the last hold is deleted without the HINCRBY. Measured server cost: see rlock's package documentation, "Release
// and retries".
var LockRelease = Script{
	Name: "lock.release",
	Keys: plainKeys,
	Args: []string{"owner", "expected hold count (0 = any)", "lease in milliseconds, re-armed while holds remain",
		publishArg},
	Reply: "nil = not held by the owner; 0 = one of several holds released; 1 = released (deleted and published, " +
		"or the head of the queue told to take it); 2 = released and granted to a queued waiter of another client; " +
		"a bulk string = released and granted to the waiter of the releasing client whose nonce it holds; -n = the " +
		"owner holds n, not the count expected (nothing changed). A next waiter whose spec does not parse is an error",
	Source: publishingFast(releaseFastLua, releaseLua),
}

// releaseFastLua is the release's fast path (publishingFast), for the two releases that find neither queue nor
// deadline set. The last hold of an owner, with no next waiter named, is deleted and the unlock message published
// — Redisson's release and one EXISTS. With a next waiter named whose nonce is its owner's id (the in-process
// hand-off of a client whose waiters are all its own), the lock goes to that owner in the same step without the
// closures, the table and the parsed entry the body would build: about a sixth less server time per hand-off
// (rlock's BenchmarkLocalHandOffServerCost). It leaves c, the owner's hold count, to the body when it falls through
// (the lock has a queue, or a deadline set whose run of hand-overs the release must end; or the next waiter's spec
// needs the body), and found, how many of the two keys exist (2: the queue does, which the body need not look up
// again), nil when the fast path did not check c (a next waiter whose spec it left to the body); c nil when the
// owner holds nothing (the body checks whether a retried release already granted the next waiter).
var releaseFastLua = `local c, found = redis.call('hget', KEYS[1], ARGV[1]), nil
if not ARGV[4] then
  if not c then return nil end
` + expectCountLua + decrementLua + `  found = redis.call('exists', KEYS[2], KEYS[3])
  if found == 0 then
    redis.call('del', KEYS[1])
` + fastPublishLua(unlockChannelLua, `'`+UnlockMessage+`'`, "1") + `  end
elseif c then
  local l = string.match(ARGV[5] or '', '^[gw](%d+):[01]:$')
  if l then
` + expectCountLua + decrementLua + `    found = redis.call('exists', KEYS[2], KEYS[3])
    if found == 0 then
      redis.call('del', KEYS[1])
      redis.call('hset', KEYS[1], ARGV[4], 1)
      redis.call('pexpire', KEYS[1], l)
      return string.match(ARGV[4], ':([^:]*)$')
    end
  end
end
`

var releaseLua = `local nxt = nil
if ARGV[4] then
  local k, p, n = string.match(ARGV[5] or '', ` + specPattern + `)
  if not k then return redis.error_reply('ERR rlock: the next waiter spec does not parse') end
  if n == '' then n = string.match(ARGV[4], ':([^:]*)$') end
  nxt = {o = ARGV[4], l = string.match(k, '^%a(%d+)$'), n = n, e = k .. ':' .. n .. ':' .. ARGV[4], prefer = p == '1'}
end
if not c then
  if nxt and redis.call('hexists', KEYS[1], nxt.o) == 1 then return nxt.n end
  return nil
end
if not found then
` + expectCountLua + decrementLua + `end
if found ~= 2 and redis.call('exists', KEYS[2]) == 0 then
  redis.call('del', KEYS[1])
  if nxt then
    if nxt.n ~= string.match(nxt.o, ':([^:]*)$') then
      local o, n = nxt.o, nxt.n
` + recordGrantLua + `
    end
    redis.call('hset', KEYS[1], nxt.o, 1)
    redis.call('pexpire', KEYS[1], nxt.l)
    return nxt.n
  end
  redis.call('zrem', KEYS[3], ':chain')
  pub(` + unlockChannelLua + `, '` + UnlockMessage + `')
  return 1
end
` + queueClockLua + queueHandOverLua + queuePassOnLua + `redis.call('zrem', KEYS[3], ':g:' .. ARGV[1])
return passOn(string.match(ARGV[1], '^(.*):'), nxt)`

// LockLeave takes a waiter that gave up (its context ended, its wait ran out, its attempt's outcome is unknown) out
// of the queue. When the lock was granted to it meanwhile (grantedLua), the grant's hold is given back: one hold
// of the owner (other calls sharing the owner may have re-entered it), released as a last hold is when it was the
// last (passOn). When the leaver was the head, the new head is served if the lock is free, and nudged otherwise
// (it learns that it is the head, and so waits for the lock's expiry). Safe to send again: a second run finds
// nothing to do. Its arguments are LockAcquire's, so that an attempt's arguments serve both.
var LockLeave = Script{
	Name: "lock.leave",
	Keys: plainKeys,
	Args: []string{"unused (the lease)", "owner",
		"the waiter's spec, as LockAcquire's; with claim \"1\" when the waiter may have been queued: a grant made to " +
			"it is looked for",
		publishArg},
	Reply: "2 = a grant to the waiter was released; 1 = it was queued and is not any more; 0 = neither (a spec " +
		"that does not parse included)",
	Source: publishing(leaveLua),
}

var leaveLua = callerSpecLua + `if not entry then return 0 end
` + queueClockLua + queueHandOverLua + queuePassOnLua + `local wasHead = redis.call('lindex', KEYS[2], 0) == entry
local removed = redis.call('lrem', KEYS[2], 0, entry)
if removed == 0 and claim == '1' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 and ` + grantedLua + ` then
  if tonumber(redis.call('hget', KEYS[1], ARGV[2])) > 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], -1)
  else
    passOn('', nil)
  end
  return 2
end
redis.call('zrem', KEYS[3], entry)
local head = live()
if head and redis.call('exists', KEYS[1]) == 0 then
  if tonumber(redis.call('zscore', KEYS[3], ':gap') or 0) <= now then
    redis.call('zrem', KEYS[3], ':chain')
    handOver(head, '')
  end
elseif head and wasHead then
  nudge(head)
end
if removed > 0 then return 1 end
return 0`

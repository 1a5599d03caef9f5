package rlock

import "github.com/locksmith-go/locksmith/conn"

// Script is one Lua script this package runs on the server, as Scripts reports it: for auditing (what exactly
// runs on your server, which keys and arguments it takes) and for benchmarking (the server's own ceiling for the
// package's work, measured with redis-benchmark or a bare client running the same EVALSHA).
//
// Calling a script directly bypasses the Client's bookkeeping: no hold is recorded, the watchdog renews nothing,
// no waiter is woken locally, and a release sent with a wrong expected hold count or owner changes nothing (or
// releases a hold the Client still believes it has). Use a Client to take and release locks.
type Script struct {
	// Name identifies the script: "<kind>.<operation>", such as "lock.acquire" (ScriptLockAcquire).
	Name string
	// Source is the Lua source, byte for byte what SCRIPT LOAD receives.
	Source string
	// SHA1 is the SHA-1 of Source in lower-case hex: the name EVALSHA uses and SCRIPT EXISTS checks.
	SHA1 string
	// Keys describes KEYS[1], KEYS[2], ... in order ("KEYS[i] ..." entries for a script taking any number).
	Keys []string
	// Args describes ARGV[1], ARGV[2], ... in order. A script that publishes takes the publish command (PUBLISH,
	// or SPUBLISH on a Redis Cluster with sharded pub/sub) as its last argument, after the ones it documents. When
	// the server refuses one of its messages (the user lacks the channel's permission), it still does all it does
	// and answers an array instead of its reply: "locksmith:publish-refused", an array holding its reply (empty
	// for a nil reply), the server's error, then each refused channel and message.
	Args []string
}

// Names of the plain lock's scripts, the two every Lock and Unlock runs (one EVALSHA each).
const (
	// ScriptLockAcquire creates or re-enters a lock, or queues the caller behind the waiters of every client.
	// KEYS: lock name, queue (locksmith_lock_queue:{name}), deadlines (locksmith_lock_timeout:{name}), unlock
	// channel (redisson_lock__channel:{name}). ARGV: lease
	// in milliseconds, owner (<clientUUID>:<ownerID>), the waiter's spec ("" for a try, never queued: what a caller
	// outside the package sends), publish command. Reply: a bulk string with the owner's hold count when granted,
	// else an integer: the PTTL of the holder's lease (or -3: queued behind another waiter).
	ScriptLockAcquire = "lock.acquire"
	// ScriptLockRelease releases one hold. KEYS: as ScriptLockAcquire. ARGV: owner, expected hold count (the
	// Client sends the count it holds, 1 for a single hold; 0 = any), lease in milliseconds (re-armed while holds
	// remain), publish command; the unlock message is Redisson's "0". Reply: nil
	// = not held by the owner, 0 = one of several holds released, 1 = released (deleted and published, or the next
	// waiter told to take it), 2 = released and granted to a queued waiter of another client, a bulk string =
	// released and granted to a queued waiter of the releasing client (its nonce), -n = the owner holds n, not the
	// count expected (nothing changed).
	ScriptLockRelease = "lock.release"
)

// plainKeysDoc describes the four keys every plain-lock script takes.
var plainKeysDoc = []string{"lock name", "queue (locksmith_lock_queue:{name})",
	"queue deadlines (locksmith_lock_timeout:{name})", "unlock channel (redisson_lock__channel:{name})"}

// acquireArgsDoc describes the plain (and fenced) acquire's arguments.
var acquireArgsDoc = []string{"lease in milliseconds", "owner (<clientUUID>:<ownerID>)",
	"waiter's spec <kind><lease>:<claim>:<nonce> (\"\" = a try, never queued)", publishArg}

// publishArg describes the last argument of every script that publishes.
const publishArg = "publish command: publish (spublish on a cluster with sharded pub/sub)"

// exported lists every script of the package with the keys and arguments its documentation gives (see each
// script's source comment for the replies). Its entries point at the very conn.Script values the package sends.
var exported = []struct {
	name   string
	script *conn.Script
	keys   []string
	args   []string
}{
	{ScriptLockAcquire, acquireScript, plainKeysDoc, acquireArgsDoc},
	{ScriptLockRelease, releaseScript, plainKeysDoc,
		[]string{"owner", "expected hold count (0 = any)", "lease in milliseconds, re-armed while holds remain",
			publishArg}},
	{"lock.leave", leaveScript, plainKeysDoc, acquireArgsDoc},
	{"lock.forceunlock", deletePublishScript, []string{"key (lock, latch)", "its channel"},
		[]string{"message", publishArg}},
	{"lock.renew", renewScript, []string{"KEYS[i]: lock name of entry i"},
		[]string{"lease in milliseconds (watchdog timeout)", "ARGV[i+1]: owner of KEYS[i]"}},
	{"lock.status", statusScript, []string{"lock name"}, nil},
	{"fencedlock.acquire", fencedAcquireScript,
		append(append([]string(nil), plainKeysDoc...), "token key (redisson_lock_token:{name})"), acquireArgsDoc},
	{"fairlock.acquire", fairAcquireScript, fairKeysDoc,
		[]string{"lease in milliseconds", "owner", "waiter's deadline in milliseconds from now (0 = try, never queued)",
			"wake-up message (\"0\")", publishArg}},
	{"fairlock.release", fairReleaseScript, fairKeysDoc,
		[]string{"owner", "expected hold count (0 = any)", "lease in milliseconds, re-armed while holds remain",
			"wake-up message (\"0\")", publishArg}},
	{"fairlock.leave", fairLeaveScript, fairKeysDoc, []string{"owner", "wake-up message (\"0\")", publishArg}},
	{"fairlock.forceunlock", fairForceUnlockScript, fairKeysDoc, []string{"wake-up message (\"0\")", publishArg}},
	{"rwlock.readacquire", rwReadAcquireScript,
		[]string{"lock name", "owner's hold-key prefix ({name}:<owner>:rwlock_timeout)"},
		[]string{"lease in milliseconds", "owner", "owner's write field (<owner>:write)"}},
	{"rwlock.writeacquire", rwWriteAcquireScript, []string{"lock name"},
		[]string{"lease in milliseconds", "owner's write field (<owner>:write)", "owner"}},
	{"rwlock.readrelease", rwReadReleaseScript,
		[]string{"lock name", "channel (redisson_rwlock:{name})", "owner's hold-key prefix",
			"every owner's hold-key prefix ({name})"},
		[]string{"owner", "expected read hold count (0 = any)", "message (\"0\")", publishArg}},
	{"rwlock.writerelease", rwWriteReleaseScript, []string{"lock name", "channel (redisson_rwlock:{name})"},
		[]string{"owner's write field", "expected write hold count (0 = any)",
			"lease in milliseconds, re-armed while write holds remain", "message (\"1\")", publishArg}},
	{"rwlock.forceunlock", rwForceUnlockScript,
		[]string{"lock name", "channel (redisson_rwlock:{name})", "every owner's hold-key prefix ({name})"},
		[]string{"the mode to force (\"read\" or \"write\")", "message (\"1\")", publishArg}},
	{"rwlock.renew", rwRenewScript, []string{"KEYS[i]: lock name of entry i"},
		[]string{"lease in milliseconds (watchdog timeout)", "ARGV[2i]: hash field of entry i",
			"ARGV[2i+1]: a reader's hold-key prefix, else \"\""}},
	{"semaphore.acquire", semAcquireScript, []string{"semaphore name"}, []string{"permits"}},
	{"semaphore.release", semReleaseScript, []string{"semaphore name", "channel (redisson_sc:{name})"},
		[]string{"permits", publishArg}},
	{"semaphore.trysetpermits", semTrySetScript, []string{"semaphore name", "channel"},
		[]string{"permits", "time to live in milliseconds (0 = none)", publishArg}},
	{"semaphore.addpermits", semAddScript, []string{"semaphore name", "channel"},
		[]string{"permits to add (non-zero)", publishArg}},
	{"semaphore.drain", semDrainScript, []string{"semaphore name"}, nil},
	{"permitsemaphore.acquire", pesAcquireScript, pesKeysDoc,
		[]string{"lease in milliseconds (0 = none)", "ARGV[2..n+1]: the new permits' ids", publishArg}},
	{"permitsemaphore.release", pesReleaseScript, pesKeysDoc, []string{"ARGV[1..n]: permit ids", publishArg}},
	{"permitsemaphore.updatelease", pesUpdateLeaseScript, pesKeysDoc,
		[]string{"permit id", "lease in milliseconds (0 = none)", publishArg}},
	{"permitsemaphore.available", pesAvailableScript, pesKeysDoc, []string{publishArg}},
	{"permitsemaphore.trysetpermits", pesTrySetScript, pesKeysDoc, []string{"permits", publishArg}},
	{"permitsemaphore.addpermits", pesAddScript, pesKeysDoc, []string{"permits to add (non-zero)", publishArg}},
	{"countdownlatch.trysetcount", latchTrySetScript,
		[]string{"latch name", "channel (redisson_countdownlatch__channel__{name})"},
		[]string{"count", "message (\"1\")", publishArg}},
	{"countdownlatch.countdown", latchCountDownScript, []string{"latch name", "channel"},
		[]string{"message (\"0\")", publishArg}},
	{"ratelimiter.acquire", rlAcquireScript, rlKeysDoc, []string{"permits", "random bytes making the grant unique"}},
	{"ratelimiter.available", rlAvailableScript, rlKeysDoc, nil},
	{"ratelimiter.trysetrate", rlTrySetScript, []string{"config"}, rlRateArgsDoc},
	{"ratelimiter.setrate", rlSetScript, rlKeysDoc, rlRateArgsDoc},
	{"ratelimiter.fixedwindow", fixedWindowScript, []string{"counter key"},
		[]string{"permits", "window in milliseconds", "limit per window"}},
}

// Key and argument descriptions several scripts share.
var (
	fairKeysDoc = []string{"lock name", "queue (redisson_lock_queue:{name})", "deadlines (redisson_lock_timeout:{name})",
		"channel prefix (redisson_lock__channel:{name})"}
	pesKeysDoc    = []string{"permits (name)", "leases ({name}:timeout)", "channel (redisson_sc:{name})"}
	rlKeysDoc     = []string{"config (name)", "value", "client value", "permits", "client permits"}
	rlRateArgsDoc = []string{"rate", "interval in milliseconds", "type (0 = overall, 1 = per client)",
		"keep-alive in milliseconds (0 = none)"}
)

// Scripts returns every Lua script the package runs, in a fixed order, plain lock first: for operators who audit
// what runs on their server or SCRIPT LOAD it ahead of time, and for benchmarks that measure the server's ceiling
// with the package's own scripts. Calling them directly bypasses the Client's bookkeeping (see Script). The slice
// and its contents are the caller's. It does not block and is safe for concurrent use.
func Scripts() []Script {
	out := make([]Script, len(exported))
	for i, e := range exported {
		out[i] = Script{Name: e.name, Source: e.script.Source(), SHA1: e.script.SHA(),
			Keys: append([]string(nil), e.keys...), Args: append([]string(nil), e.args...)}
	}
	return out
}

// LookupScript returns the script named name (as Script.Name, e.g. ScriptLockAcquire), and false when the package
// has none by that name. Calling it directly bypasses the Client's bookkeeping (see Script). It does not block and
// is safe for concurrent use.
func LookupScript(name string) (Script, bool) {
	for _, s := range Scripts() {
		if s.Name == name {
			return s, true
		}
	}
	return Script{}, false
}

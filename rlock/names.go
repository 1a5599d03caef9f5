package rlock

import (
	"strings"

	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// Key and channel names, in Redisson's keyspace. Every object's auxiliary keys and channels carry the object's name
// as a Redis Cluster hash tag ({name}), so that they hash to the object's slot and one script may touch them all.
// Redisson (RedissonObject.prefixName and suffixName) wraps the name in braces only when it has none: a name that
// already contains "{" (say "{orders}:42", written so that several objects share a slot) is used as it is, and its
// own hash tag decides the slot. The functions here follow that rule for every key and channel of the package, so
// a Java client and this one meet on the same names whatever the name looks like.
//
// The count-down latch's channel is the exception Redisson makes: it always wraps the name ("...__{name}").

// prefixName is Redisson's prefixName: prefix:{name}, or prefix:name when name already contains "{".
func prefixName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// suffixName is Redisson's suffixName: {name}:suffix, or name:suffix when name already contains "{".
func suffixName(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// hashTag is the part of an object's auxiliary key names that carries its name: {name}, or name when it already
// contains "{" (the prefix of suffixName).
func hashTag(name string) string {
	if strings.Contains(name, "{") {
		return name
	}
	return "{" + name + "}"
}

// The name prefixes, as Redisson spells them.
const (
	lockChannelPrefix  = "redisson_lock__channel" // a lock's unlock channel (fair locks: + ":<owner>" per waiter)
	lockTokenPrefix    = "redisson_lock_token"    // the fenced lock's token counter
	fairQueuePrefix    = "redisson_lock_queue"    // the fair lock's queue of waiters
	fairTimeoutPrefix  = "redisson_lock_timeout"  // the fair lock's waiter deadlines
	rwChannelPrefix    = "redisson_rwlock"        // a read-write lock's channel
	semChannelPrefix   = "redisson_sc"            // a semaphore's channel (both kinds)
	latchChannelPrefix = "redisson_countdownlatch__channel__"
)

// The names of the plain lock's queue of waiters, kept beside the lock in its hash slot. They are this package's
// own (a Redisson client neither reads nor writes them), hence their prefix; the scripts derive a grant channel's
// name from the queue's, so the scripts' package defines them.
const (
	lockQueuePrefix   = scripts.LockQueuePrefix   // the queue of waiting entries
	lockTimeoutPrefix = scripts.LockTimeoutPrefix // the entries' deadlines
	lockGrantPrefix   = scripts.LockGrantPrefix   // + ":<clientUUID>": a client's grant channel
)

// Positions in a plain-layout lock's keys (plainKeys): every script of the plain lock takes all four, in this order.
const (
	keyLock = iota
	keyQueue
	keyDeadlines
	keyChannel
	numPlainKeys
)

// plainKeys returns the plain lock's key names for the lock name: the lock, its queue, the queue's deadlines and
// its unlock channel — the keys every plain-lock script takes, so that a Redis Cluster routes them together and
// redirects them together while the slot migrates.
//
// The unlock channel is not a key, but it is declared as one, as Redisson's scripts declare it, for what that
// does while the slot migrates: the source node refuses (TRYAGAIN) a script whose declared keys it has only in
// part, and a channel never exists as a key, so no plain-lock script runs on a slot in migration, and the client
// retries it until the slot has moved. That is needed: inside a script, the server refuses to touch a key that is
// missing from a migrating slot ("non local key"), and the scripts delete keys they touch again (a hand-over
// deletes the lock and grants it anew; a queue empties and fills), so a script could stop half-done. The prefix of
// the grant channels is derived in Lua from the queue's name (grantPrefixLua): every argument an EVALSHA carries
// costs the server a string to parse and hand to Lua.
//
// The names are made for each call, in one allocation (the three after the lock share it), rather than kept with
// each handle (a held lock keeps nothing but its name): the caller keeps the array on its stack (conn encodes the
// keys at once).
func plainKeys(name string) (keys [numPlainKeys]string) {
	braces := !strings.Contains(name, "{") // Redisson's prefixName
	tag := len(name) + 1                   // ":" + name, or ":{" + name + "}"
	if braces {
		tag += 2
	}
	var b strings.Builder
	b.Grow(len(lockQueuePrefix) + len(lockTimeoutPrefix) + len(lockChannelPrefix) + 3*tag)
	for _, p := range [...]string{lockQueuePrefix, lockTimeoutPrefix, lockChannelPrefix} {
		b.WriteString(p)
		b.WriteByte(':')
		if braces {
			b.WriteByte('{')
		}
		b.WriteString(name)
		if braces {
			b.WriteByte('}')
		}
	}
	all := b.String()
	queueEnd := len(lockQueuePrefix) + tag
	deadlinesEnd := queueEnd + len(lockTimeoutPrefix) + tag
	keys[keyLock] = name
	keys[keyQueue] = all[:queueEnd]
	keys[keyDeadlines] = all[queueEnd:deadlinesEnd]
	keys[keyChannel] = all[deadlinesEnd:]
	return keys
}

// grantChannel is the grant channel of client id on the lock name.
func grantChannel(name, id string) string { return prefixName(lockGrantPrefix, name) + ":" + id }

// channelName returns the unlock channel of a lock (plain, fenced, fair): redisson_lock__channel:{name}.
func channelName(name string) string { return prefixName(lockChannelPrefix, name) }

// latchChannelName returns a count-down latch's channel: redisson_countdownlatch__channel__{name}, braces always.
func latchChannelName(name string) string { return latchChannelPrefix + "{" + name + "}" }

// rwHoldPrefix is the prefix of an owner's read-hold keys of a read-write lock: {name}:<owner>:rwlock_timeout
// (hold n is the key prefix:n).
func rwHoldPrefix(name, owner string) string { return suffixName(name, owner) + ":rwlock_timeout" }

// writeField is the hash field of an owner's write hold on a read-write lock: <owner>:write.
func writeField(owner string) string { return owner + ":write" }

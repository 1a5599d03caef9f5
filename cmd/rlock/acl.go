package main

import (
	"strings"
)

// aclCommands are the commands an rlock user must be allowed: the plain Lock's minimal ACL (docs/acl.md, measured
// against redis-server 7.0 by the integration tests) plus CLIENT SETNAME, which rlock sends in the connection
// handshake. Redis checks the commands a script runs against the calling user too, so the scripts' commands are
// here: the lock's hash and channel, and the queue of waiters the library keeps beside the lock (a list and a
// sorted set, the server's TIME). UNSUBSCRIBE ends a wait; a refusal of it is silent but leaves the subscription.
var aclCommands = []string{
	"+ping", "+client|setname", "+evalsha", "+script|load", "+subscribe", "+unsubscribe",
	"+exists", "+hexists", "+hincrby", "+hget", "+hset", "+hgetall", "+pexpire", "+pttl", "+type", "+del",
	"+publish", "+time", "+lindex", "+lpop", "+rpush", "+lrem", "+llen", "+zadd", "+zscore", "+zrem", "+persist",
}

// lockKey is Redisson's prefixName for the lock name: prefix:{name}, or prefix:name when the name has braces of its
// own. The lock's channel, its queue of waiters, the queue's deadlines and the prefix of its grant channels are all
// named so; the scripts get the channels as keys too.
func lockKey(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// lockChannel is the channel a lock's releases are published on.
func lockChannel(name string) string { return lockKey("redisson_lock__channel", name) }

// aclRules returns the ACL rules that let a Redis user run every rlock subcommand on the lock name: its key, its
// channel (as a key and as a channel), its queue's keys, its grant channels, and aclCommands. Names are glob
// patterns in ACL rules, so the name's glob characters are escaped.
func aclRules(name string) []string {
	ch := globEscape(lockChannel(name))
	grants := globEscape(lockKey("locksmith_lock__channel", name))
	return append([]string{"~" + globEscape(name), "~" + ch, "~" + globEscape(lockKey("locksmith_lock_queue", name)),
		"~" + globEscape(lockKey("locksmith_lock_timeout", name)), "&" + ch, "&" + grants + ":*"},
		aclCommands...)
}

// globEscape escapes the characters Redis's glob patterns treat specially (stringmatchlen: * ? [ ] \).
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

package main

import (
	"strings"
)

// aclCommands are the commands an rlock user must be allowed: the plain Lock's minimal ACL (docs/acl.md, measured
// against redis-server 7.0 by the integration tests) plus CLIENT SETNAME, which rlock sends in the connection
// handshake. Redis checks the commands a script runs against the calling user too, so the scripts' commands are
// here: the lock's own and those of the queue of waiters kept beside it.
var aclCommands = []string{
	"+ping", "+client|setname", "+evalsha", "+script|load", "+subscribe", "+unsubscribe",
	"+exists", "+hexists", "+hget", "+hgetall", "+hincrby", "+hset", "+del", "+pexpire", "+pttl", "+persist", "+type",
	"+time", "+publish", "+lindex", "+llen", "+lpop", "+lrem", "+rpush", "+zadd", "+zrem", "+zscore",
}

// prefixName is Redisson's name of a lock's auxiliary key or channel: prefix:{name}, or prefix:name when the name
// has braces of its own.
func prefixName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// lockChannel is the channel a lock's releases are published on.
func lockChannel(name string) string { return prefixName("redisson_lock__channel", name) }

// aclRules returns the ACL rules that let a Redis user run every rlock subcommand on the lock name: its key, the
// keys the scripts are given (the release channel, the queue of waiters, their deadlines, the prefix of the
// clients' grant channels), the release channel and the grant channels, and aclCommands. Names are glob patterns
// in ACL rules, so the name's glob characters are escaped.
func aclRules(name string) []string {
	ch := globEscape(lockChannel(name))
	grant := globEscape(prefixName("locksmith_lock__channel", name))
	return append([]string{"~" + globEscape(name), "~" + ch, "~" + globEscape(prefixName("locksmith_lock_queue", name)),
		"~" + globEscape(prefixName("locksmith_lock_timeout", name)), "~" + grant, "&" + ch, "&" + grant + ":*"},
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

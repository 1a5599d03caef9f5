package main

import (
	"strings"
)

// aclCommands are the commands an rlock user must be allowed, measured against redis-server 7.0 with ACL SETUSER
// (README.md, "Redis permissions"): PING and CLIENT SETNAME in the connection handshake, EVALSHA and SCRIPT LOAD
// (sent once after NOSCRIPT) for the lock scripts, SUBSCRIBE for a wait, and what the scripts call — Redis checks
// the commands a script runs against the calling user too.
var aclCommands = []string{
	"+ping", "+client|setname", "+evalsha", "+script|load", "+subscribe",
	"+exists", "+hexists", "+hincrby", "+hget", "+hgetall", "+pexpire", "+pttl", "+type", "+del", "+publish",
}

// lockChannel is the channel a lock's releases are published on, Redisson's prefixName: the name in braces,
// unless it has braces of its own. The scripts get it as a key, so a user needs key access to it as well as the
// channel.
func lockChannel(name string) string {
	if strings.Contains(name, "{") {
		return "redisson_lock__channel:" + name
	}
	return "redisson_lock__channel:{" + name + "}"
}

// aclRules returns the ACL rules that let a Redis user run every rlock subcommand on the lock name: its key, its
// channel as a key and as a channel, and aclCommands. Names are glob patterns in ACL rules, so the name's glob
// characters are escaped.
func aclRules(name string) []string {
	ch := globEscape(lockChannel(name))
	return append([]string{"~" + globEscape(name), "~" + ch, "&" + ch}, aclCommands...)
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

package rlock

import "github.com/locksmith-go/locksmith/rlock/internal/scripts"

// Script is one Lua script this package runs on the server, as Scripts reports it: for auditing (what exactly
// runs on your server, which keys and arguments it takes, what it answers) and for benchmarking (the server's own
// ceiling for the package's work, measured with redis-benchmark or a bare client running the same EVALSHA).
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
	// Reply describes what the script answers.
	Reply string
}

// Names of the plain lock's scripts, the two every Lock and Unlock runs (one EVALSHA each). Their keys, arguments
// and replies are in the Script that LookupScript returns.
const (
	// ScriptLockAcquire creates or re-enters a lock, or queues the caller behind the waiters of every client.
	// Sent with an empty waiter's spec (its third argument), it is a try that is never queued: what a caller
	// outside the package sends.
	ScriptLockAcquire = "lock.acquire"
	// ScriptLockRelease releases one hold, conditional on the hold count the caller expects, and passes the lock
	// to the next waiter or publishes Redisson's unlock message ("0") when the last hold goes.
	ScriptLockRelease = "lock.release"
)

// Scripts returns every Lua script the package runs, in a fixed order, plain lock first: for operators who audit
// what runs on their server or SCRIPT LOAD it ahead of time, and for benchmarks that measure the server's ceiling
// with the package's own scripts. Calling them directly bypasses the Client's bookkeeping (see Script). The slice
// and its contents are the caller's. It does not block and is safe for concurrent use.
func Scripts() []Script {
	out := make([]Script, len(scripts.All))
	for i, s := range scripts.All {
		out[i] = Script{Name: s.Name, Source: s.Source, SHA1: sent[s].SHA(), Reply: s.Reply,
			Keys: append([]string(nil), s.Keys...), Args: append([]string(nil), s.Args...)}
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

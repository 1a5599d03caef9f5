package workload

import (
	"fmt"

	"github.com/locksmith-go/locksmith/rlock"
)

// Script is a Lua script with its SHA-1, run with EVALSHA (EVAL when the
// server does not have it yet).
type Script struct {
	Name string // rlock's name for it (rlock.Script.Name)
	Src  string
	SHA  string
}

// The plain lock's scripts of rlock, exactly as the library sends them
// (rlock.Scripts): the server ceiling and every raw baseline run these, with
// the keys and arguments rlock passes (AcquireArgs, ReleaseArgs), so that the
// ceiling and the raw transports measure the library's own server work.
var (
	// AcquireScript: KEYS and ARGV as AcquireArgs. Reply: a bulk string (the
	// owner's hold count) when granted, else the integer PTTL.
	AcquireScript = lockScript(rlock.ScriptLockAcquire)
	// ReleaseScript: KEYS and ARGV as ReleaseArgs. Reply: 1 released
	// (deleted and published), 0 one of several holds released, nil not held
	// by the owner, -n the owner holds n holds, not the count expected.
	ReleaseScript = lockScript(rlock.ScriptLockRelease)
)

// The constant arguments rlock sends with the release on a standalone server.
const (
	// PublishCommand is the publish command rlock passes as the last argument
	// of a publishing script on a server without sharded pub/sub.
	PublishCommand = "publish"
	// ExpectOne is the expected hold count of a release of a single hold (what
	// rlock sends for every lock held once, the raw baselines' only case).
	ExpectOne = "1"
)

// lockScript returns rlock's script name; rlock exports it, so a missing one
// is a programming error of this package.
func lockScript(name string) *Script {
	s, ok := rlock.LookupScript(name)
	if !ok {
		panic(fmt.Sprintf("workload: rlock exports no script %q", name))
	}
	return &Script{Name: s.Name, Src: s.Source, SHA: s.SHA1}
}

// AcquireArgs returns the acquire's keys and arguments for a try that never
// queues (what a caller outside rlock sends; rlock's own waiters queue
// themselves on the server), as rlock sends them on a standalone server.
func AcquireArgs(name, leaseMs, owner string) (keys, args []string) {
	return LockKeys(name), []string{leaseMs, owner, "", PublishCommand}
}

// ReleaseArgs returns the release's keys and arguments for a lock held once,
// as rlock sends them on a standalone server.
func ReleaseArgs(name, leaseMs, owner string) (keys, args []string) {
	return LockKeys(name), []string{owner, ExpectOne, leaseMs, PublishCommand}
}

// LockKeys are the four keys every plain-lock script of rlock takes, for a
// name without braces: the lock, its queue of waiters, the queue's deadlines
// and its unlock channel.
func LockKeys(name string) []string {
	tag := "{" + name + "}"
	return []string{name, "locksmith_lock_queue:" + tag, "locksmith_lock_timeout:" + tag, UnlockChannel(name)}
}

// UnlockChannel is the Redisson unlock channel of lock name (rlock's for a
// name without braces).
func UnlockChannel(name string) string { return "redisson_lock__channel:{" + name + "}" }

package main

import (
	"context"
	"time"
)

// locker is everything the subcommands need from the lock library: acquire with a wait and a lease (returning the
// held context, which is cancelled with a cause when the lock stops being held), release, status and force
// unlock. The real implementation is rlockLocker; the process-management tests use an in-process fake, so that the
// supervision logic (signals, lost lock, exit codes) is tested apart from Redis. Errors are the rlock package's
// (rlock.ErrNotAcquired, rlock.ErrNotHeld, ...) and conn's, which describe turns into exit codes and advice.
type locker interface {
	// Acquire takes the lock described by a, blocking for at most a.Wait (forever when negative) or until ctx
	// ends. It returns the held context and the owner id the lock is held as. The held context is not cancelled
	// by ctx: it ends when the lock is released or lost, with context.Cause saying which.
	Acquire(ctx context.Context, a acquisition) (held context.Context, owner string, err error)

	// Release releases one hold of the lock name held by the owner held carries (an acquired context, or one
	// returned by withOwner). It blocks until the server answered or ctx ends.
	Release(ctx context.Context, held context.Context, name string) error

	// WithOwner returns a context that acts as owner (a "<uuid>:<n>" id) for Release.
	WithOwner(ctx context.Context, owner string) context.Context

	// Status reads the lock's owners, hold counts and remaining lease, blocking until the server answered or ctx
	// ends.
	Status(ctx context.Context, name string) (lockStatus, error)

	// ForceUnlock deletes the lock whoever holds it and wakes its waiters; it reports whether there was one.
	ForceUnlock(ctx context.Context, name string) (bool, error)

	// Close disconnects. Locks still held are not released: they end with their lease.
	Close() error
}

// acquisition describes one acquire.
type acquisition struct {
	Name  string
	Wait  time.Duration // negative: wait as long as it takes; 0: a single attempt
	Lease time.Duration // 0: the watchdog (renewed while held); positive: a fixed lease, not renewed
	Owner string        // "": a new owner; otherwise acquire as this "<uuid>:<n>" owner (re-entering its holds)
}

// waitForever is the -wait value meaning "no bound".
const waitForever time.Duration = -1

// lockStatus is what `rlock status` reports about one name.
type lockStatus struct {
	Name string
	// Type is the Redis type of the key: "none" (no key: the lock is free), "hash" (a lock) or another type (the
	// name is used by something that is not a lock).
	Type string
	// Mode is the read-write lock mode ("read" or "write") when the hash is a Redisson read-write lock, else "".
	Mode string
	// Holders lists the owner fields with their hold counts, sorted by owner.
	Holders []holder
	// TTL is the remaining lease (PTTL), or rlock.TTLNoExpiry for a key without expiry, rlock.TTLNoKey for none.
	TTL time.Duration
}

// holder is one owner field of a lock hash.
type holder struct {
	Owner    string `json:"owner"`
	OwnerB64 string `json:"owner_b64,omitempty"` // set for -json output when Owner is not valid UTF-8
	Holds    int64  `json:"holds"`
}

// locked reports whether the status shows a held lock.
func (s lockStatus) locked() bool { return s.Type != "none" }

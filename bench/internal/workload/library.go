package workload

import (
	"context"
	"errors"
	"time"
)

// Errors an adapter returns so that workloads can tell outcomes apart without
// knowing the library.
var (
	// ErrGaveUp is returned (wrapped) by Library.Lock when the library stopped
	// waiting by itself before the caller's context ended: redsync after its
	// tries, bsm/redislock when its internal deadline passed. Workloads count it
	// as a give-up and call Lock again; it is not an error of the library.
	ErrGaveUp = errors.New("workload: the library gave up waiting for the lock")

	// ErrUnsupported is returned (wrapped) when a library lacks what a workload
	// needs (a watchdog, an async API); the case is reported as not applicable.
	ErrUnsupported = errors.New("workload: not supported by this library")
)

// Config is what a Factory gets to build a Library for one case.
type Config struct {
	// Addr is the redis-server address, host:port.
	Addr string
	// Variant is the part of the library name after the first ':' ("1ms" in
	// "redsync:1ms"); empty for the default configuration.
	Variant string
	// Lease is the fixed lease of a lock taken with Library.Lock by libraries
	// without a watchdog (ours uses its watchdog there, as its users do).
	Lease time.Duration
	// WatchdogTTL is the lease kept alive by the watchdog in W3: the key's TTL,
	// renewed by the library (or by the adapter's renewal goroutine, for
	// libraries whose users renew by hand) before it runs out.
	WatchdogTTL time.Duration
	// Workload is the case's workload (W1...), for libraries configured once
	// for every lock they take (rueidislock's key validity).
	Workload string
	// Goroutines is how many goroutines of this process will call the library
	// at once: connection pools are sized to it (go-redis' PoolSize at least
	// this, as its maintainers advise for blocking users).
	Goroutines int
}

// Describer is implemented by adapters that can say how they configured
// their library (client, pool, options), for the report's configuration
// table. The text is the same for every case of a library and variant:
// sizes that depend on the case are given as a formula (max(G, 20)).
type Describer interface {
	Describe() string
}

// Factory builds a connected Library. It blocks until the library is ready to
// take locks, bounded by ctx.
type Factory func(ctx context.Context, cfg Config) (Library, error)

// Library is a lock library under test, adapted to the workloads. Every method
// is safe for concurrent use; Lock blocks.
type Library interface {
	// Lock blocks until the lock named name is held or ctx ends, and returns
	// the held lock. It returns an error wrapping ErrGaveUp when the library
	// stopped waiting by itself, and ctx.Err() (possibly wrapped) when ctx
	// ended first. ctx bounds the acquisition only: a held lock stays held
	// until Unlock even when ctx ends meanwhile (the workloads end ctx when a
	// window closes, while holders may be inside their critical section).
	Lock(ctx context.Context, name string) (Held, error)
	// Close releases the library's connections and goroutines. It blocks until
	// they are gone (as far as the library allows).
	Close() error
}

// Binder is implemented by libraries whose users keep something per lock
// between acquisitions of one goroutine: a mutex object (redsync, ours' lock
// handle), or keys and arguments built once (the raw baselines). W1, W2 and W4
// bind each goroutine's lock once and acquire through the binding;
// libraries without it are called with the name every time.
type Binder interface {
	// Bind returns name's lock for one goroutine; the Locker is used by that
	// goroutine only, one acquisition at a time.
	Bind(name string) Locker
}

// Locker acquires one bound lock (Binder).
type Locker interface {
	// Lock blocks as Library.Lock does.
	Lock(ctx context.Context) (Held, error)
}

// bind returns goroutine-private access to name's lock on lib.
func bind(lib Library, name string) Locker {
	if b, ok := lib.(Binder); ok {
		return b.Bind(name)
	}
	return nameLocker{lib: lib, name: name}
}

type nameLocker struct {
	lib  Library
	name string
}

func (n nameLocker) Lock(ctx context.Context) (Held, error) { return n.lib.Lock(ctx, n.name) }

// Held is one acquisition of a lock.
type Held interface {
	// Unlock releases the lock. ctx bounds the call where the library accepts
	// a context.
	Unlock(ctx context.Context) error
}

// Watchdog is implemented by libraries that can keep a lock alive while it is
// held (W3).
type Watchdog interface {
	// LockWatched acquires name and keeps it alive until Unlock: the key gets
	// Config.WatchdogTTL and is renewed before it expires, by the library
	// itself or by one renewal goroutine per lock in the adapter (what the
	// library's users write). ctx bounds the acquisition only.
	LockWatched(ctx context.Context, name string) (WatchedHeld, error)
	// RenewPlan describes how renewals are sent, to compute the expected
	// renewal command rate: every interval, one command per batch locks.
	RenewPlan() (interval time.Duration, batch int)
}

// WatchedHeld is a lock held under a watchdog.
type WatchedHeld interface {
	Held
	// Lost reports whether the library has reported the lock lost (a renewal
	// failed, the lease ran out). W3 asks before unlocking, so adapters whose
	// only signal is a context that Unlock also cancels may use it.
	Lost() bool
}

// OwnershipChecker is implemented by libraries that can check on the server
// whether locks are still held by their holder (W3's "lost on the server").
type OwnershipChecker interface {
	// CountOwned returns how many of held the server still shows as owned by
	// this client. It blocks, bounded by ctx.
	CountOwned(ctx context.Context, held []WatchedHeld) (int, error)
}

// Async is implemented by libraries with a non-blocking lock API (W5).
type Async interface {
	// LockAsync starts acquiring name and returns at once; done is called
	// exactly once, from any goroutine, when the lock is held or the attempt
	// failed. done must not block.
	LockAsync(ctx context.Context, name string, done func(Held, error))
	// UnlockAsync starts releasing h and returns at once; done is called
	// exactly once, from any goroutine. done must not block.
	UnlockAsync(ctx context.Context, h Held, done func(error))
}

// CommandCounter is implemented by adapters that can count the commands the
// client sends (client hooks). Without it the orchestrator estimates client
// commands from the server's command statistics.
type CommandCounter interface {
	// Commands returns the number of commands sent so far, and false when
	// this adapter cannot count them after all. Safe for concurrent use.
	Commands() (n uint64, ok bool)
}

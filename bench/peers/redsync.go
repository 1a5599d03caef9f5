package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

// redsyncLib adapts go-redsync/redsync v4 on one go-redis client. Each
// goroutine keeps its *redsync.Mutex between acquisitions (Bind), as its
// users do.
type redsyncLib struct {
	c *redis.Client
	*cmdCount
	rs     *redsync.Redsync
	opts   []redsync.Option
	lease  time.Duration
	ttl    time.Duration
	config string
}

func newRedsync(ctx context.Context, cfg workload.Config) (workload.Library, error) {
	var opts []redsync.Option
	config := "redsync " + version("github.com/go-redsync/redsync/v4") + " on " + goredisConfig + "; "
	switch cfg.Variant {
	case "":
		config += "its defaults: 32 tries, retry delay random 50–250 ms"
	case "1ms":
		opts = append(opts, redsync.WithRetryDelay(time.Millisecond))
		config += "32 tries, WithRetryDelay(1 ms)"
	default:
		return nil, fmt.Errorf("redsync: unknown variant %q (have 1ms)", cfg.Variant)
	}
	config += "; expiry = the lease (W3: the TTL, extended every TTL/3 by a goroutine per lock); a Mutex per goroutine"
	c, n, err := newGoredisClient(ctx, cfg.Addr, cfg.Goroutines)
	if err != nil {
		return nil, err
	}
	return &redsyncLib{c: c, cmdCount: n, rs: redsync.New(goredis.NewPool(c)), opts: opts, lease: cfg.Lease,
		ttl: cfg.WatchdogTTL, config: config}, nil
}

func (l *redsyncLib) Describe() string { return l.config }

// Bind keeps one Mutex for a goroutine's acquisitions of name (redsync
// draws a new random value at every Lock).
func (l *redsyncLib) Bind(name string) workload.Locker { return redsyncLocker{l.mutex(name, l.lease)} }

type redsyncLocker struct{ m *redsync.Mutex }

func (r redsyncLocker) Lock(ctx context.Context) (workload.Held, error) {
	if err := lockRedsync(ctx, r.m); err != nil {
		return nil, err
	}
	return &redsyncHeld{m: r.m}, nil
}

type redsyncHeld struct {
	m *redsync.Mutex
	r *renewal // nil without a watchdog
}

func (l *redsyncLib) mutex(name string, expiry time.Duration) *redsync.Mutex {
	return l.rs.NewMutex(name, append([]redsync.Option{redsync.WithExpiry(expiry)}, l.opts...)...)
}

// lockRedsync blocks in LockContext. redsync stops after its tries with
// ErrFailed, or with the last try's *ErrTaken (the key was held): both are
// give-ups.
func lockRedsync(ctx context.Context, m *redsync.Mutex) error {
	err := m.LockContext(ctx)
	var taken *redsync.ErrTaken
	if err != nil && ctx.Err() == nil && (errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken)) {
		return fmt.Errorf("%w: %w", workload.ErrGaveUp, err)
	}
	return err
}

// Lock takes the lock with redsync's default expiry replaced by the case's
// fixed lease.
func (l *redsyncLib) Lock(ctx context.Context, name string) (workload.Held, error) {
	m := l.mutex(name, l.lease)
	if err := lockRedsync(ctx, m); err != nil {
		return nil, err
	}
	return &redsyncHeld{m: m}, nil
}

// LockWatched takes the lock with expiry = TTL and extends it every TTL/3
// (as ours' watchdog does).
func (l *redsyncLib) LockWatched(ctx context.Context, name string) (workload.WatchedHeld, error) {
	m := l.mutex(name, l.ttl)
	if err := lockRedsync(ctx, m); err != nil {
		return nil, err
	}
	h := &redsyncHeld{m: m}
	h.r = startRenewal(l.ttl/3, func(ctx context.Context) error {
		ok, err := m.ExtendContext(ctx)
		if err == nil && !ok {
			err = errNotExtended
		}
		return err
	})
	return h, nil
}

func (l *redsyncLib) RenewPlan() (time.Duration, int) { return l.ttl / 3, 1 }

func (l *redsyncLib) CountOwned(ctx context.Context, held []workload.WatchedHeld) (int, error) {
	return countConcurrently(ctx, len(held), func(ctx context.Context, i int) (bool, error) {
		// Until, the suggested replacement, is the client's own estimate; this count asks the servers.
		//lint:ignore SA1019 the server-side ownership check has no other API
		return held[i].(*redsyncHeld).m.ValidContext(ctx)
	})
}

func (h *redsyncHeld) Unlock(ctx context.Context) error {
	if h.r != nil {
		h.r.end()
	}
	ok, err := h.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = workload.ErrNotOwner
	}
	return err
}

func (h *redsyncHeld) Lost() bool { return h.r != nil && h.r.isLost() }

func (l *redsyncLib) Close() error { return l.c.Close() }

var (
	_ workload.Watchdog         = (*redsyncLib)(nil)
	_ workload.OwnershipChecker = (*redsyncLib)(nil)
	_ workload.CommandCounter   = (*redsyncLib)(nil)
	_ workload.Binder           = (*redsyncLib)(nil)
	_ workload.Describer        = (*redsyncLib)(nil)
)

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/bench/workload"
)

// redislockLib adapts bsm/redislock on one go-redis client. Its default
// retry strategy is NoRetry (Obtain fails at once on a taken key), which no
// blocking-lock user keeps: the default variant uses ExponentialBackoff with
// the 16 ms minimum its documentation recommends and a 512 ms cap.
type redislockLib struct {
	c *redis.Client
	*cmdCount
	rl    *redislock.Client
	retry func() redislock.RetryStrategy
	lease time.Duration
	ttl   time.Duration
}

func newRedislock(ctx context.Context, cfg workload.Config) (workload.Library, error) {
	var retry func() redislock.RetryStrategy
	switch cfg.Variant {
	case "":
		retry = func() redislock.RetryStrategy {
			return redislock.ExponentialBackoff(16*time.Millisecond, 512*time.Millisecond)
		}
	case "1ms":
		retry = func() redislock.RetryStrategy { return redislock.LinearBackoff(time.Millisecond) }
	default:
		return nil, fmt.Errorf("redislock: unknown variant %q (have 1ms)", cfg.Variant)
	}
	c, n, err := newGoredisClient(ctx, cfg.Addr)
	if err != nil {
		return nil, err
	}
	return &redislockLib{c: c, cmdCount: n, rl: redislock.New(c), retry: retry, lease: cfg.Lease, ttl: cfg.WatchdogTTL}, nil
}

type redislockHeld struct {
	l *redislock.Lock
	r *renewal
}

// obtain blocks until the lock is held. Without a deadline on ctx, Obtain
// stops retrying after the lock's TTL (its own deadline): that is a give-up.
func (l *redislockLib) obtain(ctx context.Context, name string, ttl time.Duration) (*redislock.Lock, error) {
	lk, err := l.rl.Obtain(ctx, name, ttl, &redislock.Options{RetryStrategy: l.retry()})
	if err != nil && ctx.Err() == nil &&
		(errors.Is(err, redislock.ErrNotObtained) || errors.Is(err, context.DeadlineExceeded)) {
		return nil, fmt.Errorf("%w: %w", workload.ErrGaveUp, err)
	}
	return lk, err
}

func (l *redislockLib) Lock(ctx context.Context, name string) (workload.Held, error) {
	lk, err := l.obtain(ctx, name, l.lease)
	if err != nil {
		return nil, err
	}
	return &redislockHeld{l: lk}, nil
}

// LockWatched takes the lock with TTL and refreshes it every TTL/2.
func (l *redislockLib) LockWatched(ctx context.Context, name string) (workload.WatchedHeld, error) {
	lk, err := l.obtain(ctx, name, l.ttl)
	if err != nil {
		return nil, err
	}
	ttl := l.ttl
	return &redislockHeld{l: lk, r: startRenewal(ttl/2, func(ctx context.Context) error {
		return lk.Refresh(ctx, ttl, nil)
	})}, nil
}

func (l *redislockLib) RenewPlan() (time.Duration, int) { return l.ttl / 2, 1 }

func (l *redislockLib) CountOwned(ctx context.Context, held []workload.WatchedHeld) (int, error) {
	return countConcurrently(ctx, len(held), func(ctx context.Context, i int) (bool, error) {
		ttl, err := held[i].(*redislockHeld).l.TTL(ctx)
		return ttl > 0, err
	})
}

func (h *redislockHeld) Unlock(ctx context.Context) error {
	if h.r != nil {
		h.r.end()
	}
	err := h.l.Release(ctx)
	if errors.Is(err, redislock.ErrLockNotHeld) {
		return fmt.Errorf("%w: %w", workload.ErrNotOwner, err)
	}
	return err
}

func (h *redislockHeld) Lost() bool { return h.r != nil && h.r.isLost() }

func (l *redislockLib) Close() error { return l.c.Close() }

var (
	_ workload.Watchdog         = (*redislockLib)(nil)
	_ workload.OwnershipChecker = (*redislockLib)(nil)
)

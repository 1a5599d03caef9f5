package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

// redislockLib adapts bsm/redislock on one go-redis client. Its default
// retry strategy is NoRetry (Obtain fails at once on a taken key), which no
// blocking-lock user keeps: the default variant backs off exponentially from
// the 16 ms minimum its ExponentialBackoff documentation recommends, capped
// at 512 ms (its examples retry every 100 to 500 ms), with jitter
// (jitteredBackoff) so that the waiters of a contended key do not retry in
// step.
type redislockLib struct {
	c *redis.Client
	*cmdCount
	rl     *redislock.Client
	retry  func() redislock.RetryStrategy
	lease  time.Duration
	ttl    time.Duration
	config string
}

// Back-off of the default variant.
const (
	redislockMinBackoff = 16 * time.Millisecond
	redislockMaxBackoff = 512 * time.Millisecond
)

// jitteredBackoff is redislock.ExponentialBackoff(min, max) with equal
// jitter: each delay is drawn uniformly from [d/2, d] where d is the
// exponential delay (2^n ms, within [min, max]). redislock has no jittered
// strategy of its own; a RetryStrategy is its extension point for this.
type jitteredBackoff struct{ exp redislock.RetryStrategy }

func (j jitteredBackoff) NextBackoff() time.Duration {
	d := j.exp.NextBackoff()
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

func newRedislock(ctx context.Context, cfg workload.Config) (workload.Library, error) {
	var retry func() redislock.RetryStrategy
	config := "redislock " + version("github.com/bsm/redislock") + " on " + goredisConfig + "; "
	switch cfg.Variant {
	case "":
		retry = func() redislock.RetryStrategy {
			return jitteredBackoff{redislock.ExponentialBackoff(redislockMinBackoff, redislockMaxBackoff)}
		}
		config += "retry: ExponentialBackoff(16 ms, 512 ms) with equal jitter (uniform in [d/2, d])"
	case "1ms":
		retry = func() redislock.RetryStrategy { return redislock.LinearBackoff(time.Millisecond) }
		config += "retry: LinearBackoff(1 ms)"
	default:
		return nil, fmt.Errorf("redislock: unknown variant %q (have 1ms)", cfg.Variant)
	}
	config += "; TTL = the lease, Obtain gives up after it (a give-up; W3: the TTL, refreshed every TTL/3 by a " +
		"goroutine per lock)"
	c, n, err := newGoredisClient(ctx, cfg.Addr, cfg.Goroutines)
	if err != nil {
		return nil, err
	}
	return &redislockLib{c: c, cmdCount: n, rl: redislock.New(c), retry: retry, lease: cfg.Lease,
		ttl: cfg.WatchdogTTL, config: config}, nil
}

func (l *redislockLib) Describe() string { return l.config }

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

// LockWatched takes the lock with TTL and refreshes it every TTL/3 (as ours'
// watchdog does).
func (l *redislockLib) LockWatched(ctx context.Context, name string) (workload.WatchedHeld, error) {
	lk, err := l.obtain(ctx, name, l.ttl)
	if err != nil {
		return nil, err
	}
	ttl := l.ttl
	return &redislockHeld{l: lk, r: startRenewal(ttl/3, func(ctx context.Context) error {
		return lk.Refresh(ctx, ttl, nil)
	})}, nil
}

func (l *redislockLib) RenewPlan() (time.Duration, int) { return l.ttl / 3, 1 }

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

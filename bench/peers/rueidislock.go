package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/locksmith-go/locksmith/bench/workload"
)

// rueidislockLib adapts rueidislock. KeyMajority 1 and NoLoopTracking are
// what its README recommends for a single Redis >= 7.0.5; KeyValidity is the
// case's watchdog TTL (the library extends every KeyValidity/2 by itself).
type rueidislockLib struct {
	lk  rueidislock.Locker
	n   *atomic.Uint64
	ttl time.Duration
}

func newRueidislock(ctx context.Context, cfg workload.Config) (workload.Library, error) {
	n := &atomic.Uint64{}
	opt := rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: []string{cfg.Addr}},
		KeyMajority:    1,
		NoLoopTracking: true,
		KeyValidity:    cfg.WatchdogTTL,
		ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			if err != nil {
				return nil, err
			}
			return countingClient{Client: c, n: n}, nil
		},
	}
	switch cfg.Variant {
	case "":
	case "loop":
		opt.NoLoopTracking = false
	case "1s":
		opt.TryNextAfter = time.Second
	default:
		return nil, fmt.Errorf("rueidislock: unknown variant %q (have loop, 1s)", cfg.Variant)
	}
	lk, err := rueidislock.NewLocker(opt)
	if err != nil {
		return nil, err
	}
	return &rueidislockLib{lk: lk, n: n, ttl: cfg.WatchdogTTL}, nil
}

type rueidislockHeld struct {
	name   string
	ctx    context.Context
	cancel context.CancelFunc
}

func (l *rueidislockLib) Commands() (uint64, bool) { return l.n.Load(), true }

// Lock blocks in WithContext; the lock is released by the returned cancel
// (which waits for the delete) or when ctx ends.
func (l *rueidislockLib) Lock(ctx context.Context, name string) (workload.Held, error) {
	hctx, cancel, err := l.lk.WithContext(ctx, name)
	if err != nil {
		return nil, err
	}
	return &rueidislockHeld{name: name, ctx: hctx, cancel: cancel}, nil
}

// LockWatched keeps the lock until Unlock. rueidislock ties a lock's life to
// the context it was acquired with, so the acquisition runs under a context of
// its own that ctx can cancel only until the lock is held (Watchdog: ctx
// bounds the acquisition only).
func (l *rueidislockLib) LockWatched(ctx context.Context, name string) (workload.WatchedHeld, error) {
	life, end := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, end)
	hctx, cancel, err := l.lk.WithContext(life, name)
	if !stop() { // ctx ended first: the acquisition was (or the lock is now) cancelled
		if err == nil {
			cancel()
		}
		end()
		return nil, ctx.Err()
	}
	if err != nil {
		end()
		return nil, err
	}
	return &rueidislockHeld{name: name, ctx: hctx, cancel: func() { cancel(); end() }}, nil
}

func (l *rueidislockLib) RenewPlan() (time.Duration, int) { return l.ttl / 2, 1 }

// CountOwned checks that each lock's key (KeyMajority 1: one key) still
// exists; rueidislock keeps its random value private, and nothing else
// touches these keys during W3.
func (l *rueidislockLib) CountOwned(ctx context.Context, held []workload.WatchedHeld) (int, error) {
	c := l.lk.Client()
	return countConcurrently(ctx, len(held), func(ctx context.Context, i int) (bool, error) {
		key := "rueidislock:0:" + held[i].(*rueidislockHeld).name
		n, err := c.Do(ctx, c.B().Exists().Key(key).Build()).AsInt64()
		return n == 1, err
	})
}

func (h *rueidislockHeld) Unlock(context.Context) error {
	h.cancel()
	return nil
}

// Lost reports whether the held context ended: W3 asks before unlocking, when
// only a loss (a failed extension) can have ended it.
func (h *rueidislockHeld) Lost() bool { return h.ctx.Err() != nil }

func (l *rueidislockLib) Close() error {
	l.lk.Close()
	return nil
}

var (
	_ workload.Watchdog         = (*rueidislockLib)(nil)
	_ workload.OwnershipChecker = (*rueidislockLib)(nil)
	_ workload.CommandCounter   = (*rueidislockLib)(nil)
)

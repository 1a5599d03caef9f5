package workload

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"runtime"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/redisadmin"
)

// testFactories are the libraries a test's case processes can run: locks on
// the server that work across processes, two that exclude (pollLock and the
// fifo reference) and one that never does (brokenLock).
var testFactories = map[string]Factory{
	"poll":   newPollLock,
	"broken": func(context.Context, Config) (Library, error) { return brokenLock{}, nil },
	"fifo":   NewFIFO,
}

// pollLock is a plain cross-process lock for tests: SET NX PX, polled every
// pollEvery while taken; released by a compare-and-delete script. One
// connection per call keeps it simple (tests only).
type pollLock struct {
	addr  string
	lease time.Duration
}

const pollEvery = 200 * time.Microsecond

var pollRelease = newCheckScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

func newPollLock(_ context.Context, cfg Config) (Library, error) {
	return &pollLock{addr: cfg.Addr, lease: cfg.Lease}, nil
}

type pollHeld struct {
	c          *redisadmin.Client
	name, self string
}

func (l *pollLock) Lock(ctx context.Context, name string) (Held, error) {
	c, err := redisadmin.Dial(ctx, l.addr)
	if err != nil {
		return nil, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	self := hex.EncodeToString(b[:])
	for {
		v, err := c.Do(ctx, "SET", name, self, "NX", "PX", "10000")
		if err != nil {
			c.Close()
			return nil, err
		}
		if v != nil {
			return &pollHeld{c: c, name: name, self: self}, nil
		}
		if !sleepCtx(ctx, pollEvery) {
			c.Close()
			return nil, ctx.Err()
		}
	}
}

func (h *pollHeld) Unlock(ctx context.Context) error {
	defer h.c.Close()
	_, err := h.c.Do(ctx, "EVAL", pollRelease.Src, "1", h.name, h.self)
	return err
}

func (l *pollLock) Close() error { return nil }

// brokenLock grants every Lock at once: no exclusion at all.
type brokenLock struct{}

type brokenHeld struct{}

func (brokenLock) Lock(context.Context, string) (Held, error) {
	runtime.Gosched()
	return brokenHeld{}, nil
}

func (brokenLock) Close() error { return nil }

func (brokenHeld) Unlock(context.Context) error { return nil }

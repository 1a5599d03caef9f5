package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

// goredisPoolSize is the go-redis pool of a case with g goroutines per
// process: at least one connection per goroutine (a blocked caller waits for
// a free connection otherwise: go-redis' maintainers size the pool to the
// concurrency), and never below its default at GOMAXPROCS=2 (10 per CPU), so
// that it does not shrink with GOMAXPROCS.
func goredisPoolSize(g int) int { return max(g, 20) }

// goredisConfig describes the client newGoredisClient builds.
var goredisConfig = "go-redis " + version("github.com/redis/go-redis/v9") +
	" PoolSize max(G, 20) (G = goroutines per process), otherwise its defaults (no pipelining)"

// newGoredisClient returns a go-redis client with its defaults but the pool
// (goredisPoolSize) and a hook counting the commands it sends.
func newGoredisClient(ctx context.Context, addr string, goroutines int) (*redis.Client, *cmdCount, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: goredisPoolSize(goroutines)})
	n := &cmdCount{}
	c.AddHook(n)
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	n.n.Store(0) // the PING above is not part of any case
	return c, n, nil
}

// cmdCount is a go-redis hook counting commands (a pipeline counts each of
// its commands). It implements workload.CommandCounter.
type cmdCount struct{ n atomic.Uint64 }

func (h *cmdCount) Commands() (uint64, bool) { return h.n.Load(), true }

func (h *cmdCount) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *cmdCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *cmdCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(uint64(len(cmds)))
		return next(ctx, cmds)
	}
}

var _ redis.Hook = (*cmdCount)(nil)

// goredisTransport runs the raw baseline on go-redis: rlock's own lock scripts
// by EVALSHA (Script.Run).
type goredisTransport struct {
	c *redis.Client
	*cmdCount
	scripts map[*workload.Script]*redis.Script
}

func newRawGoredis(ctx context.Context, cfg workload.Config) (workload.Library, error) {
	c, n, err := newGoredisClient(ctx, cfg.Addr, cfg.Goroutines)
	if err != nil {
		return nil, err
	}
	t := &goredisTransport{c: c, cmdCount: n, scripts: map[*workload.Script]*redis.Script{
		workload.AcquireScript: redis.NewScript(workload.AcquireScript.Src),
		workload.ReleaseScript: redis.NewScript(workload.ReleaseScript.Src),
	}}
	return rawLock{workload.NewRawLock(t, cfg.Lease), goredisConfig + "; rlock's scripts by Script.Run " +
		"(EVALSHA), a PubSub per waited unlock channel; owner, keys and arguments built once per goroutine"}, nil
}

func (t *goredisTransport) Eval(ctx context.Context, s *workload.Script, keys []string, args ...string) (workload.Reply, error) {
	av := make([]any, len(args))
	for i, a := range args {
		av[i] = a
	}
	v, err := t.scripts[s].Run(ctx, t.c, keys, av...).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return workload.Reply{Kind: workload.ReplyNil}, nil
	case err != nil:
		return workload.Reply{}, err
	}
	switch v := v.(type) {
	case int64:
		return workload.Reply{Kind: workload.ReplyInt, N: v}, nil
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return workload.Reply{Kind: workload.ReplyBulk, N: n}, err
	}
	return workload.Reply{}, fmt.Errorf("goredis: unexpected script reply %T %v", v, v)
}

// Subscribe uses one go-redis PubSub (its own connection) per channel, and
// one goroutine reading it.
func (t *goredisTransport) Subscribe(ctx context.Context, channel string, onMessage func()) (func(), error) {
	ps := t.c.Subscribe(ctx, channel)
	t.n.Add(1)
	if _, err := ps.Receive(ctx); err != nil { // the subscription confirmation
		_ = ps.Close()
		return nil, err
	}
	ch := ps.Channel()
	var wg sync.WaitGroup
	wg.Add(1)
	// Owned by the subscription: ends when unsubscribe closes ps (which
	// closes ch); waited for in unsubscribe.
	go func() {
		defer wg.Done()
		for range ch {
			onMessage()
		}
	}()
	return func() {
		t.n.Add(1)
		_ = ps.Close()
		wg.Wait()
	}, nil
}

func (t *goredisTransport) Close() error { return t.c.Close() }

// rawLock is the raw baselines' Library: workload.RawLock with its
// transport's configuration (workload.Describer).
type rawLock struct {
	*workload.RawLock
	config string
}

func (r rawLock) Describe() string { return r.config }

var _ workload.Binder = rawLock{}

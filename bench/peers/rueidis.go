package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

// countingClient wraps a rueidis.Client and counts the commands sent through
// Do and DoMulti (what rueidislock and the raw baseline use; Lua.Exec's
// EVALSHA and its EVAL fallback both go through Do). It implements
// workload.CommandCounter.
type countingClient struct {
	rueidis.Client
	n *atomic.Uint64
}

func (c countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	if slot, ok := ctx.Value(valueSlotKey{}).(*valueSlot); ok {
		args := slices.Clone(cmd.Commands()) // copied before Do: rueidis may recycle the command afterwards
		res := c.Client.Do(ctx, cmd)
		slot.record(args, res)
		return res
	}
	return c.Client.Do(ctx, cmd)
}

func (c countingClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(uint64(len(multi)))
	return c.Client.DoMulti(ctx, multi...)
}

func (c countingClient) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(msg rueidis.PubSubMessage)) error {
	c.n.Add(1)
	return c.Client.Receive(ctx, subscribe, fn)
}

// rueidisPipelineMultiplex is the rueidis pipeline multiplex of every
// rueidis-based adapter: 2^1 = 2 pipelined connections, rueidis' default at
// GOMAXPROCS 2..3, set so that it does not shrink to one connection at
// GOMAXPROCS=1 (locksmith's pool is 2 connections too).
const rueidisPipelineMultiplex = 1

// rueidisConfig describes the client options of the rueidis-based adapters.
var rueidisConfig = "rueidis " + version("github.com/redis/rueidis") +
	" PipelineMultiplex 1 (2 pipelined connections), auto-pipelining"

// flushDelay is raw rueidis' MaxFlushDelay in its "flush" variant: the 20 µs
// its option's documentation suggests (fewer syscalls under load for some
// latency).
const flushDelay = 20 * time.Microsecond

// rueidisTransport runs the raw baseline on rueidis (auto-pipelining):
// rlock's own lock scripts by EVALSHA (Lua.Exec).
type rueidisTransport struct {
	c       countingClient
	scripts map[*workload.Script]*rueidis.Lua
}

func newRawRueidis(ctx context.Context, cfg workload.Config) (workload.Library, error) {
	opt := rueidis.ClientOption{InitAddress: []string{cfg.Addr}, PipelineMultiplex: rueidisPipelineMultiplex}
	config := rueidisConfig + ", MaxFlushDelay 0 (its default)"
	switch cfg.Variant {
	case "":
	case "flush":
		opt.MaxFlushDelay = flushDelay
		config = rueidisConfig + ", MaxFlushDelay 20 µs"
	default:
		return nil, fmt.Errorf("rueidis: unknown variant %q (have flush)", cfg.Variant)
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, err
	}
	t := &rueidisTransport{c: countingClient{Client: c, n: &atomic.Uint64{}}, scripts: map[*workload.Script]*rueidis.Lua{
		workload.AcquireScript: rueidis.NewLuaScript(workload.AcquireScript.Src),
		workload.ReleaseScript: rueidis.NewLuaScript(workload.ReleaseScript.Src),
	}}
	return rawLock{workload.NewRawLock(t, cfg.Lease), config + "; rlock's scripts by Lua.Exec (EVALSHA), " +
		"Receive per waited unlock channel; owner, keys and arguments built once per goroutine"}, nil
}

func (t *rueidisTransport) Commands() (uint64, bool) { return t.c.n.Load(), true }

func (t *rueidisTransport) Eval(ctx context.Context, s *workload.Script, keys []string, args ...string) (workload.Reply, error) {
	m, err := t.scripts[s].Exec(ctx, t.c, keys, args).ToMessage()
	switch {
	case rueidis.IsRedisNil(err):
		return workload.Reply{Kind: workload.ReplyNil}, nil
	case err != nil:
		return workload.Reply{}, err
	}
	kind := workload.ReplyInt
	if m.IsString() {
		kind = workload.ReplyBulk
	}
	n, err := m.AsInt64()
	return workload.Reply{Kind: kind, N: n}, err
}

// Subscribe runs client.Receive (rueidis' pub/sub) in a goroutine until
// unsubscribe cancels it, and waits for the subscription's confirmation.
func (t *rueidisTransport) Subscribe(ctx context.Context, channel string, onMessage func()) (func(), error) {
	rctx, cancel := context.WithCancel(context.Background())
	confirmed := make(chan struct{})
	var once sync.Once
	rctx = rueidis.WithOnSubscriptionHook(rctx, func(s rueidis.PubSubSubscription) {
		if s.Kind == "subscribe" && s.Channel == channel {
			once.Do(func() { close(confirmed) })
		}
	})
	done := make(chan error, 1)
	// Owned by the subscription: ends when unsubscribe cancels rctx (or the
	// client closes); waited for in unsubscribe.
	go func() {
		done <- t.c.Receive(rctx, t.c.B().Subscribe().Channel(channel).Build(), func(rueidis.PubSubMessage) {
			onMessage()
		})
	}()
	unsubscribe := func() {
		cancel()
		<-done
	}
	select {
	case <-confirmed:
		return unsubscribe, nil
	case err := <-done:
		cancel()
		return nil, err
	case <-ctx.Done():
		unsubscribe()
		return nil, ctx.Err()
	}
}

func (t *rueidisTransport) Close() error {
	t.c.Close()
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock"
)

// oursFactories are the libraries this binary runs itself (the peers run in
// the peers binary): locksmith's rlock ("ours", variant "lease"), the raw
// transport baseline on its conn package ("ours-conn") and the first come,
// first served reference of the contended workloads ("fifo").
func oursFactories() map[string]workload.Factory {
	return map[string]workload.Factory{
		"ours":      newOurs,
		"ours-conn": newOursConn,
		"fifo":      workload.NewFIFO,
	}
}

// oursLib adapts rlock. Lock uses the watchdog (what Redisson's users get
// from lock()), variant "lease" a fixed lease (LockLease). The watchdog
// timeout is the case's TTL: it only matters for locks held longer than a
// third of it, which only W3 does.
type oursLib struct {
	c      *rlock.Client
	lease  time.Duration // 0: watchdog
	ttl    time.Duration
	config string
}

// oursConnConfig is the transport of both of ours' adapters, set explicitly
// (conn's defaults, which do not depend on GOMAXPROCS).
func oursConnConfig(addr string) conn.Config {
	return conn.Config{Addr: addr, PoolSize: conn.DefaultPoolSize, EventLoops: conn.DefaultEventLoops}
}

var oursConnDescription = fmt.Sprintf("conn PoolSize %d (pipelined connections), EventLoops %d, latency lane on, "+
	"FlushEager", conn.DefaultPoolSize, conn.DefaultEventLoops)

func newOurs(_ context.Context, cfg workload.Config) (workload.Library, error) {
	l := &oursLib{ttl: cfg.WatchdogTTL}
	switch cfg.Variant {
	case "":
		l.config = "rlock Lock with the watchdog (WatchdogTimeout = the TTL, renewed every TTL/3 in batches)"
	case "lease":
		l.lease = cfg.Lease
		l.config = "rlock LockLease(the lease)"
	default:
		return nil, fmt.Errorf("ours: unknown variant %q (have lease)", cfg.Variant)
	}
	l.config += "; a lock handle per goroutine (W3: per held lock) on " + oursConnDescription
	c, err := rlock.NewClient(rlock.Config{Conn: oursConnConfig(cfg.Addr), WatchdogTimeout: cfg.WatchdogTTL})
	if err != nil {
		return nil, err
	}
	l.c = c
	return l, nil
}

func (l *oursLib) Describe() string { return l.config }

// oursHeld is a held lock: the *rlock.Lock handle it was taken with and the
// held context (lock, then unlock with the same handle, as a caller writes
// it; W3 counts both in the heap per held lock, as the peers' adapters keep
// their lock objects).
type oursHeld struct {
	lk   *rlock.Lock
	held context.Context
}

func (h *oursHeld) lock() *rlock.Lock { return h.lk }

// Bind keeps one lock handle for a goroutine's acquisitions of name, as a
// user keeps the handle of a lock it takes repeatedly.
func (l *oursLib) Bind(name string) workload.Locker { return oursLocker{l: l, lk: l.c.Lock(name)} }

type oursLocker struct {
	l  *oursLib
	lk *rlock.Lock
}

func (o oursLocker) Lock(ctx context.Context) (workload.Held, error) { return o.l.lockWith(ctx, o.lk) }

func (l *oursLib) Lock(ctx context.Context, name string) (workload.Held, error) {
	return l.lockWith(ctx, l.c.Lock(name))
}

func (l *oursLib) lockWith(ctx context.Context, lk *rlock.Lock) (workload.Held, error) {
	var held context.Context
	var err error
	if l.lease > 0 {
		held, err = lk.LockLease(ctx, l.lease)
	} else {
		held, err = lk.Lock(ctx)
	}
	if err != nil {
		return nil, err
	}
	return &oursHeld{lk: lk, held: held}, nil
}

func (h *oursHeld) Unlock(context.Context) error { return h.lock().Unlock(h.held) }

// Lost reports whether the held context ended for another reason than the
// release.
func (h *oursHeld) Lost() bool {
	return h.held.Err() != nil && !errors.Is(context.Cause(h.held), rlock.ErrReleased)
}

// LockWatched is Lock with the watchdog: one timer entry per lock, renewals
// batched. The held lock keeps its handle, as a user's would.
func (l *oursLib) LockWatched(ctx context.Context, name string) (workload.WatchedHeld, error) {
	lk := l.c.Lock(name)
	held, err := lk.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return &oursHeld{lk: lk, held: held}, nil
}

// RenewPlan: every WatchdogTimeout/3, one EVALSHA per batch of
// DefaultRenewBatchSize locks.
func (l *oursLib) RenewPlan() (time.Duration, int) { return l.ttl / 3, rlock.DefaultRenewBatchSize }

// CountOwned asks IsHeldBy for every lock, pipelined through the async form
// in chunks.
func (l *oursLib) CountOwned(ctx context.Context, held []workload.WatchedHeld) (int, error) {
	const chunk = 1024
	owned := 0
	for start := 0; start < len(held); start += chunk {
		end := min(start+chunk, len(held))
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		for _, h := range held[start:end] {
			oh := h.(*oursHeld)
			wg.Add(1)
			oh.lock().IsHeldByAsync(oh.held).OnComplete(func(ok bool, err error) {
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if ok {
					owned++
				}
				mu.Unlock()
				wg.Done()
			})
		}
		wg.Wait()
		if firstErr != nil {
			return owned, firstErr
		}
		if err := ctx.Err(); err != nil {
			return owned, err
		}
	}
	return owned, nil
}

// LockAsync and UnlockAsync hand rlock's futures to the workload's callbacks
// (run on the completing goroutine; the workload's callbacks do not block).
func (l *oursLib) LockAsync(ctx context.Context, name string, done func(workload.Held, error)) {
	lk := l.c.Lock(name)
	var f *future.Future[context.Context]
	if l.lease > 0 {
		f = lk.LockLeaseAsync(ctx, l.lease)
	} else {
		f = lk.LockAsync(ctx)
	}
	f.OnComplete(func(held context.Context, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		done(&oursHeld{lk: lk, held: held}, nil)
	})
}

func (l *oursLib) UnlockAsync(_ context.Context, h workload.Held, done func(error)) {
	oh := h.(*oursHeld)
	oh.lock().UnlockAsync(oh.held).OnComplete(func(_ struct{}, err error) { done(err) })
}

func (l *oursLib) Close() error { return l.c.Close() }

var (
	_ workload.Watchdog         = (*oursLib)(nil)
	_ workload.OwnershipChecker = (*oursLib)(nil)
	_ workload.Async            = (*oursLib)(nil)
	_ workload.Binder           = (*oursLib)(nil)
	_ workload.Describer        = (*oursLib)(nil)
)

// oursConn is the raw baseline on locksmith's conn package: rlock's own lock
// scripts (workload.AcquireScript, ReleaseScript) by conn.Client.Eval
// (EVALSHA), subscriptions by conn.Client.Subscribe. It isolates the transport
// from rlock's client logic.
type oursConn struct {
	c       *conn.Client
	scripts map[*workload.Script]*conn.Script
}

func newOursConn(_ context.Context, cfg workload.Config) (workload.Library, error) {
	if cfg.Variant != "" {
		return nil, fmt.Errorf("ours-conn: no variants")
	}
	c, err := conn.New(oursConnConfig(cfg.Addr))
	if err != nil {
		return nil, err
	}
	t := &oursConn{c: c, scripts: map[*workload.Script]*conn.Script{
		workload.AcquireScript: conn.NewScript(workload.AcquireScript.Src),
		workload.ReleaseScript: conn.NewScript(workload.ReleaseScript.Src),
	}}
	return rawLock{workload.NewRawLock(t, cfg.Lease), oursConnDescription + "; rlock's scripts by conn.Client.Eval " +
		"(EVALSHA), conn.Client.Subscribe per waited unlock channel; owner, keys and arguments built once per " +
		"goroutine"}, nil
}

// rawLock is the raw baseline's Library with its transport's configuration
// (workload.Describer).
type rawLock struct {
	*workload.RawLock
	config string
}

func (r rawLock) Describe() string { return r.config }

func (t *oursConn) Eval(ctx context.Context, s *workload.Script, keys []string, args ...string) (workload.Reply, error) {
	v, err := t.c.Eval(ctx, t.scripts[s], keys, args...).Get(ctx)
	switch {
	case err != nil:
		return workload.Reply{}, err
	case v.Null:
		return workload.Reply{Kind: workload.ReplyNil}, nil
	}
	kind := workload.ReplyInt
	if v.Type == resp.BulkString {
		kind = workload.ReplyBulk
	}
	n, err := v.AsInt64()
	return workload.Reply{Kind: kind, N: n}, err
}

func (t *oursConn) Subscribe(ctx context.Context, channel string, onMessage func()) (func(), error) {
	sub, err := t.c.Subscribe(channel, func(conn.Message) { onMessage() }).Get(ctx)
	if err != nil {
		return nil, err
	}
	return sub.Close, nil
}

func (t *oursConn) Close() error { return t.c.Close() }

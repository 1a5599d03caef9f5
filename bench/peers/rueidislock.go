package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

// rueidislockLib adapts rueidislock. KeyMajority 1 and NoLoopTracking are
// what its README recommends for a single Redis >= 7.0.5. TryNextAfter is
// 1 s: its 20 ms default gives up waiting for an invalidation after 20 ms and
// re-tries, which under contention strands waiters (variant "20ms" keeps it).
// KeyValidity is the fixed lease the other libraries get (-lease) for the
// short holds, and the watchdog TTL in W3, where it is extended every TTL/3
// like everyone's (its default is every KeyValidity/2).
type rueidislockLib struct {
	lk     rueidislock.Locker
	n      *atomic.Uint64
	ttl    time.Duration
	config string
}

func newRueidislock(ctx context.Context, cfg workload.Config) (workload.Library, error) {
	n := &atomic.Uint64{}
	opt := rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{cfg.Addr},
			PipelineMultiplex: rueidisPipelineMultiplex},
		KeyMajority:    1,
		NoLoopTracking: true,
		TryNextAfter:   time.Second,
		KeyValidity:    cfg.Lease,
		ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			if err != nil {
				return nil, err
			}
			return countingClient{Client: c, n: n}, nil
		},
	}
	if cfg.Workload == workload.HeldMany {
		opt.KeyValidity, opt.ExtendInterval = cfg.WatchdogTTL, cfg.WatchdogTTL/3
	}
	config := rueidisConfig + "; rueidislock KeyMajority 1, NoLoopTracking, TryNextAfter "
	switch cfg.Variant {
	case "":
		config += "1 s"
	case "loop":
		opt.NoLoopTracking = false
		config = strings.Replace(config, "NoLoopTracking", "loop tracking", 1) + "1 s"
	case "20ms":
		opt.TryNextAfter = 0 // its default, 20 ms
		config += "20 ms (its default)"
	default:
		return nil, fmt.Errorf("rueidislock: unknown variant %q (have loop, 20ms)", cfg.Variant)
	}
	config += "; KeyValidity = the lease (W3: the TTL, extended every TTL/3)"
	lk, err := rueidislock.NewLocker(opt)
	if err != nil {
		return nil, err
	}
	return &rueidislockLib{lk: lk, n: n, ttl: cfg.WatchdogTTL, config: config}, nil
}

func (l *rueidislockLib) Describe() string { return l.config }

type rueidislockHeld struct {
	name   string
	value  string // the key's value when acquired (W3: the ownership check compares it)
	ctx    context.Context
	cancel context.CancelFunc
}

func (l *rueidislockLib) Commands() (uint64, bool) { return l.n.Load(), true }

// Lock blocks in WithContext until the lock is held; it stays held until
// Unlock (the returned cancel, which waits for the delete), whatever ctx does
// afterwards (detached).
func (l *rueidislockLib) Lock(ctx context.Context, name string) (workload.Held, error) {
	h, err := l.detached(ctx, context.Background(), name)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// LockWatched keeps the lock until Unlock, extended by rueidislock itself, and
// records the value it was acquired with for CountOwned (Watchdog: ctx bounds
// the acquisition only).
func (l *rueidislockLib) LockWatched(ctx context.Context, name string) (workload.WatchedHeld, error) {
	slot := &valueSlot{}
	h, err := l.detached(ctx, context.WithValue(context.Background(), valueSlotKey{}, slot), name)
	if err != nil {
		return nil, err
	}
	h.value = slot.get()
	return h, nil
}

// detached acquires name under a context of its own, derived from base, that
// ctx can cancel only until the lock is held. rueidislock ties a lock's life
// to the context it was acquired with: with ctx itself, the end of ctx would
// release a held lock under its holder — the harness ends its context when a
// window closes, while holders may be inside their critical section, and a
// holder of another process would then enter it too.
func (l *rueidislockLib) detached(ctx, base context.Context, name string) (*rueidislockHeld, error) {
	life, end := context.WithCancel(base)
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

func (l *rueidislockLib) RenewPlan() (time.Duration, int) { return l.ttl / 3, 1 }

// CountOwned checks that each lock's key (KeyMajority 1: one key) still holds
// the value it was acquired with. rueidislock keeps that random value
// private; the adapter's client wrapper saw it go by in the acquire script's
// arguments (valueSlot), so the check needs no extra command at acquisition.
func (l *rueidislockLib) CountOwned(ctx context.Context, held []workload.WatchedHeld) (int, error) {
	c := l.lk.Client()
	return countConcurrently(ctx, len(held), func(ctx context.Context, i int) (bool, error) {
		h := held[i].(*rueidislockHeld)
		v, err := c.Do(ctx, c.B().Get().Key("rueidislock:0:"+h.name).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			return false, nil
		}
		return err == nil && h.value != "" && v == h.value, err
	})
}

// valueSlot receives the value of a rueidislock acquisition: the context of
// LockWatched carries it down to countingClient.Do, which records the value
// argument of a successful one-key script (the acquire script; the extend
// script sends the same value).
type valueSlot struct {
	mu sync.Mutex
	v  string
}

type valueSlotKey struct{}

func (s *valueSlot) get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.v
}

// record takes the value from a script call (EVALSHA/EVAL sha 1 key value
// ...) whose reply was not an error.
func (s *valueSlot) record(args []string, res rueidis.RedisResult) {
	if len(args) >= 5 && (args[0] == "EVALSHA" || args[0] == "EVAL") && args[2] == "1" && res.Error() == nil {
		s.mu.Lock()
		s.v = args[4]
		s.mu.Unlock()
	}
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

package rlock

import (
	"context"
	"crypto/rand"
	"math"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// RateType says who shares a RateLimiter's rate (Redisson's RateType).
type RateType int

const (
	// RateOverall: every client together gets Rate permits per Interval.
	RateOverall RateType = 0
	// RatePerClient: each Client (by its ID) gets Rate permits per Interval.
	RatePerClient RateType = 1
)

// RateConfig is a RateLimiter's configuration, stored on the server (Redisson's layout).
type RateConfig struct {
	Type     RateType
	Rate     int64         // permits per Interval; positive
	Interval time.Duration // the sliding window; at least 1 ms
	// KeepAlive, when not 0, makes the limiter's keys expire after KeepAlive without use; at least Interval.
	KeepAlive time.Duration
}

// RateLimiter is Redisson's RRateLimiter: a sliding-window limiter. Each grant is recorded with the time it was
// made (on the server's clock; Redisson uses the caller's) and its permits come back once it is Interval old, so
// at most Rate permits are granted in any window of Interval.
//
// Waiting callers sleep on the client's timer until the earliest moment permits come back (the script says when),
// then try again: no pub/sub, no spinning. A call whose wait ends before that moment gives up at once.
//
// Obtain it with Client.RateLimiter; it is cheap, sends nothing until used, and is safe for concurrent use.
// Invalid input (zero or negative permits, a rate or interval that is not positive) returns an *ArgumentError
// before anything is sent. See FixedWindowLimiter for the simpler fixed-window mode.
type RateLimiter struct {
	object
	keys []string // config, value, client value, permits, client permits
}

// RateLimiter returns a handle on the rate limiter called name. It does no I/O; an empty name is reported by the
// handle's methods as an *ArgumentError.
func (c *Client) RateLimiter(name string) *RateLimiter {
	value, permits := suffixName(name, "value"), suffixName(name, "permits")
	return &RateLimiter{object: c.newObject(name), keys: []string{name, value, suffixName(value, c.ID()),
		permits, suffixName(permits, c.ID())}}
}

// Name returns the limiter's name (the key of its configuration).
func (r *RateLimiter) Name() string { return r.name }

func (cfg RateConfig) check(op string) error {
	switch {
	case cfg.Type != RateOverall && cfg.Type != RatePerClient:
		return &ArgumentError{Op: op, Arg: "Type", Value: strconv.Itoa(int(cfg.Type)), Reason: "must be RateOverall or RatePerClient"}
	case cfg.Rate <= 0:
		return &ArgumentError{Op: op, Arg: "Rate", Value: strconv.FormatInt(cfg.Rate, 10), Reason: "must be positive"}
	case cfg.Interval < time.Millisecond:
		return &ArgumentError{Op: op, Arg: "Interval", Value: cfg.Interval.String(), Reason: "must be at least 1ms"}
	case cfg.KeepAlive != 0 && cfg.KeepAlive < cfg.Interval:
		return &ArgumentError{Op: op, Arg: "KeepAlive", Value: cfg.KeepAlive.String(), Reason: "must be 0 or at least Interval"}
	}
	return nil
}

func (cfg RateConfig) args() []string {
	return []string{strconv.FormatInt(cfg.Rate, 10), millis(cfg.Interval), strconv.Itoa(int(cfg.Type)), millis(cfg.KeepAlive)}
}

// TrySetRate stores cfg if the limiter has no rate yet and reports whether it did. It blocks until the server
// answers or ctx ends.
func (r *RateLimiter) TrySetRate(ctx context.Context, cfg RateConfig) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	if err := r.checkCtx("RateLimiter.TrySetRate", ctx); err != nil {
		return false, err
	}
	if err := cfg.check("RateLimiter.TrySetRate"); err != nil {
		return false, err
	}
	n, err := intReply(r.c.call(ctx, conn.Cmd{Script: rlTrySetScript, Keys: r.keys[:1], Args: cfg.args()}).Get(ctx))
	return n == 1, err
}

// SetRate stores cfg, replacing any rate, and starts a fresh window. It blocks until the server answers or ctx
// ends.
func (r *RateLimiter) SetRate(ctx context.Context, cfg RateConfig) error {
	if err := inCallback(); err != nil {
		return err
	}
	if err := r.checkCtx("RateLimiter.SetRate", ctx); err != nil {
		return err
	}
	if err := cfg.check("RateLimiter.SetRate"); err != nil {
		return err
	}
	_, err := r.c.call(ctx, conn.Cmd{Script: rlSetScript, Keys: r.keys, Args: cfg.args()}).Get(ctx)
	return err
}

// Config returns the stored configuration, or ErrRateNotSet. It blocks until the server answers or ctx ends.
func (r *RateLimiter) Config(ctx context.Context) (RateConfig, error) {
	if err := inCallback(); err != nil {
		return RateConfig{}, err
	}
	if err := r.checkCtx("RateLimiter.Config", ctx); err != nil {
		return RateConfig{}, err
	}
	v, err := r.c.call(ctx, conn.Cmd{Args: []string{"HGETALL", r.name}}).Get(ctx)
	if err != nil {
		return RateConfig{}, err
	}
	m := make(map[string]int64, 4)
	for i := 0; i+1 < len(v.Elems); i += 2 {
		n, _ := strconv.ParseInt(v.Elems[i+1].Str, 10, 64)
		m[v.Elems[i].Str] = n
	}
	if _, ok := m["rate"]; !ok {
		return RateConfig{}, ErrRateNotSet
	}
	return RateConfig{Type: RateType(m["type"]), Rate: m["rate"], Interval: serverMillis(m["interval"]),
		KeepAlive: serverMillis(m["keepAliveTime"])}, nil
}

// AvailablePermits returns the permits left in the current window (for this client with RatePerClient). It blocks
// until the server answers or ctx ends.
func (r *RateLimiter) AvailablePermits(ctx context.Context) (int64, error) {
	if err := inCallback(); err != nil {
		return 0, err
	}
	if err := r.checkCtx("RateLimiter.AvailablePermits", ctx); err != nil {
		return 0, err
	}
	n, err := intReply(r.c.call(ctx, conn.Cmd{Script: rlAvailableScript, Keys: r.keys}).Get(ctx))
	return n, mapRateErr(err)
}

func mapRateErr(err error) error {
	switch {
	case isServerError(err, "RATENOTSET"):
		return ErrRateNotSet
	case isServerError(err, "RATEEXCEEDED"):
		return ErrRateExceeded
	}
	return err
}

func rlPermitsArg(op string, permits int64) error {
	if permits <= 0 || permits > math.MaxUint32 {
		return &ArgumentError{Op: op, Arg: "permits", Value: strconv.FormatInt(permits, 10), Reason: "must be between 1 and 4294967295"}
	}
	return nil
}

func (r *RateLimiter) acquire(ctx context.Context, op string, permits int64, wait time.Duration) (*waiter, *future.Future[struct{}]) {
	if err := r.checkCtx(op, ctx); err != nil {
		return nil, future.Completed(struct{}{}, err)
	}
	if err := rlPermitsArg(op, permits); err != nil {
		return nil, future.Completed(struct{}{}, err)
	}
	n := strconv.FormatInt(permits, 10)
	spec := &permitSpec[struct{}]{
		attempt: func() (*conn.Script, []string, []string) {
			var rnd [16]byte
			_, _ = rand.Read(rnd[:])
			return rlAcquireScript, r.keys, []string{n, string(rnd[:])}
		},
		decode: func(v resp.Value, err error) (outcome, struct{}) {
			if err != nil {
				return outcome{err: mapRateErr(err)}, struct{}{}
			}
			if v.Null {
				return outcome{granted: true}, struct{}{}
			}
			d, err := v.AsInt64()
			// d is when permits come back: nothing else can make the call succeed sooner.
			return outcome{bound: max(serverMillis(d), time.Millisecond), hopeless: true, err: err}, struct{}{}
		},
	}
	return newPermitCall(r.sh, spec, "", wakeAll, permits, wait).run(ctx)
}

// TryAcquire takes permits if the window has them now or will within wait (0: one attempt), sleeping on the
// client's timer until permits come back. It reports false when they cannot be had within wait (at once, when the
// script says they come back too late), and returns ctx's error when ctx ended first. Permits granted to a call
// abandoned in flight are consumed (a sliding window cannot give permits back).
func (r *RateLimiter) TryAcquire(ctx context.Context, permits int64, wait time.Duration) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	if err := tryFormError("RateLimiter.TryAcquire", wait); err != nil {
		return false, err
	}
	w, fut := r.acquire(ctx, "RateLimiter.TryAcquire", permits, wait)
	return trySync(ctx, w, fut)
}

// TryAcquireAsync is the asynchronous form of TryAcquire.
// Get's context bounds only the wait for the future: when Get gives up, the acquire goes on. To abandon it, cancel
// ctx (permits granted in flight are consumed: a rate limiter cannot give them back).
func (r *RateLimiter) TryAcquireAsync(ctx context.Context, permits int64, wait time.Duration) *future.Future[bool] {
	if err := tryFormError("RateLimiter.TryAcquireAsync", wait); err != nil {
		return future.Completed(false, err)
	}
	_, fut := r.acquire(ctx, "RateLimiter.TryAcquireAsync", permits, wait)
	return tryAsync(fut)
}

// Acquire takes permits, waiting as long as ctx allows. Safe for concurrent use.
func (r *RateLimiter) Acquire(ctx context.Context, permits int64) error {
	if err := inCallback(); err != nil {
		return err
	}
	w, fut := r.acquire(ctx, "RateLimiter.Acquire", permits, -1)
	_, err := waitSync(ctx, w, fut)
	return err
}

// AcquireAsync is the asynchronous form of Acquire. It starts no goroutine.
// Get's context bounds only the wait for the future: when Get gives up, the acquire goes on. To abandon it, cancel
// ctx (permits granted in flight are consumed: a rate limiter cannot give them back).
func (r *RateLimiter) AcquireAsync(ctx context.Context, permits int64) *future.Future[struct{}] {
	_, fut := r.acquire(ctx, "RateLimiter.AcquireAsync", permits, -1)
	return fut
}

// FixedWindowLimiter is the fixed-window limiter of the usual Redis rate-limiting recipe (INCR a counter, expire it
// with the window): a counter (STRING <key>) that allows Limit permits per Window and expires with the window. It
// is cheaper than RateLimiter (one INCRBY per call) but lets up to twice the limit through around a window
// boundary. A refused call gives its permits back, so refusals do not use up the window (the recipe's script counts
// them). Waits sleep on the client's timer until the window ends.
//
// Obtain it with Client.FixedWindowLimiter; it is cheap, sends nothing until used, and is safe for concurrent use.
type FixedWindowLimiter struct {
	object // name: the counter's key
	limit  int64
	window time.Duration
}

// FixedWindowLimiter returns a limiter of limit permits per window on the counter key. It does no I/O; an empty
// key, a limit that is not positive or a window under 1 ms are reported by its methods as an *ArgumentError.
func (c *Client) FixedWindowLimiter(key string, limit int64, window time.Duration) *FixedWindowLimiter {
	return &FixedWindowLimiter{object: c.newObject(key), limit: limit, window: window}
}

func (l *FixedWindowLimiter) validate(ctx context.Context, op string, permits int64) error {
	if err := l.checkCtx(op, ctx); err != nil {
		return err
	}
	switch {
	case l.limit <= 0:
		return &ArgumentError{Op: op, Arg: "limit", Value: strconv.FormatInt(l.limit, 10), Reason: "must be positive"}
	case l.window < time.Millisecond:
		return &ArgumentError{Op: op, Arg: "window", Value: l.window.String(), Reason: "must be at least 1ms"}
	case permits <= 0:
		return &ArgumentError{Op: op, Arg: "permits", Value: strconv.FormatInt(permits, 10), Reason: "must be positive"}
	case permits > l.limit:
		return ErrRateExceeded
	}
	return nil
}

func (l *FixedWindowLimiter) acquire(ctx context.Context, op string, permits int64, wait time.Duration) (*waiter, *future.Future[struct{}]) {
	if err := l.validate(ctx, op, permits); err != nil {
		return nil, future.Completed(struct{}{}, err)
	}
	args := []string{strconv.FormatInt(permits, 10), millis(l.window), strconv.FormatInt(l.limit, 10)}
	keys := []string{l.name}
	spec := &permitSpec[struct{}]{
		attempt: func() (*conn.Script, []string, []string) { return fixedWindowScript, keys, args },
		decode: func(v resp.Value, err error) (outcome, struct{}) {
			d, err := intReply(v, err)
			if err != nil {
				return outcome{err: err}, struct{}{}
			}
			// d is the rest of the window: nothing else can make the call succeed sooner.
			return outcome{granted: d == 0, bound: max(serverMillis(d), time.Millisecond),
				hopeless: true}, struct{}{}
		},
	}
	return newPermitCall(l.sh, spec, "", wakeAll, permits, wait).run(ctx)
}

// TryAcquire takes permits if the window allows them now or within wait (0: one attempt). It reports false when
// it cannot, and returns ctx's error when ctx ended first; ErrRateExceeded when permits exceed the limit.
func (l *FixedWindowLimiter) TryAcquire(ctx context.Context, permits int64, wait time.Duration) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	if err := tryFormError("FixedWindowLimiter.TryAcquire", wait); err != nil {
		return false, err
	}
	w, fut := l.acquire(ctx, "FixedWindowLimiter.TryAcquire", permits, wait)
	return trySync(ctx, w, fut)
}

// TryAcquireAsync is the asynchronous form of TryAcquire.
// Get's context bounds only the wait for the future: when Get gives up, the acquire goes on. To abandon it, cancel
// ctx (permits granted in flight are consumed: a rate limiter cannot give them back).
func (l *FixedWindowLimiter) TryAcquireAsync(ctx context.Context, permits int64, wait time.Duration) *future.Future[bool] {
	if err := tryFormError("FixedWindowLimiter.TryAcquireAsync", wait); err != nil {
		return future.Completed(false, err)
	}
	_, fut := l.acquire(ctx, "FixedWindowLimiter.TryAcquireAsync", permits, wait)
	return tryAsync(fut)
}

// Acquire takes permits, waiting for later windows as long as ctx allows.
func (l *FixedWindowLimiter) Acquire(ctx context.Context, permits int64) error {
	if err := inCallback(); err != nil {
		return err
	}
	w, fut := l.acquire(ctx, "FixedWindowLimiter.Acquire", permits, -1)
	_, err := waitSync(ctx, w, fut)
	return err
}

// AcquireAsync is the asynchronous form of Acquire. It starts no goroutine.
// Get's context bounds only the wait for the future: when Get gives up, the acquire goes on. To abandon it, cancel
// ctx (permits granted in flight are consumed: a rate limiter cannot give them back).
func (l *FixedWindowLimiter) AcquireAsync(ctx context.Context, permits int64) *future.Future[struct{}] {
	_, fut := l.acquire(ctx, "FixedWindowLimiter.AcquireAsync", permits, -1)
	return fut
}

// Available returns the permits left in the current window. It blocks until the server answers or ctx ends.
func (l *FixedWindowLimiter) Available(ctx context.Context) (int64, error) {
	if err := inCallback(); err != nil {
		return 0, err
	}
	if err := l.validate(ctx, "FixedWindowLimiter.Available", 1); err != nil {
		return 0, err
	}
	used, err := intReply(l.c.call(ctx, conn.Cmd{Args: []string{"GET", l.name}}).Get(ctx))
	return max(l.limit-used, 0), err
}

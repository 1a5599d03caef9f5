package rlock

import (
	"context"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// Semaphore is Redisson's RSemaphore: a count of permits in the STRING <name>, taken and returned atomically by
// scripts, with waiters woken through the channel redisson_sc:{name}, which carries the number of permits available
// after each release: a release of n permits wakes, in order, the waiters those permits can satisfy, not every
// waiter. Permits belong to nobody: any caller may release them, and a process that dies keeps the ones it took
// (use PermitExpirableSemaphore for permits with leases).
//
// Redisson's semaphore must be set (TrySetPermits) before use; acquiring from a semaphore that was never set
// waits until it is. Obtain it with Client.Semaphore; it is cheap, sends nothing until used, and is safe for
// concurrent use. Invalid input (zero or negative permits, a negative wait) returns an *ArgumentError before
// anything is sent.
type Semaphore struct {
	object
	keys []string // {name, channel}
}

// Semaphore returns a handle on the semaphore called name. It does no I/O; an empty name is reported by the
// handle's methods as an *ArgumentError.
func (c *Client) Semaphore(name string) *Semaphore {
	return &Semaphore{object: c.newObject(name), keys: []string{name, prefixName(semChannelPrefix, name)}}
}

// Name returns the semaphore's name (its Redis key).
func (s *Semaphore) Name() string { return s.name }

func (s *Semaphore) acquire(ctx context.Context, op string, permits int, wait time.Duration) (*waiter, *future.Future[struct{}]) {
	if err := s.checkCtx(op, ctx); err != nil {
		return nil, future.Completed(struct{}{}, err)
	}
	if permits <= 0 {
		return nil, future.Completed(struct{}{}, permitsError(op, int64(permits)))
	}
	n := strconv.Itoa(permits)
	spec := &permitSpec[struct{}]{
		attempt: func() (*conn.Script, []string, []string) { return semAcquireScript, s.keys[:1], []string{n} },
		decode: func(v resp.Value, err error) (outcome, struct{}) {
			got, err := intReply(v, err)
			if err != nil {
				return outcome{err: err}, struct{}{}
			}
			// A semaphore has no lease to wait for: a refusal is bounded by recheckBound.
			return outcome{granted: got == 1, bound: recheckBound}, struct{}{}
		},
		undo: func(struct{}) { s.giveBack(permits) },
	}
	return newPermitCall(s.sh, spec, s.keys[1], wakePermits, int64(permits), wait).run(ctx)
}

// giveBack returns permits taken for a call whose caller will never see them.
func (s *Semaphore) giveBack(permits int) {
	s.c.callOnce(background, conn.Cmd{Script: semReleaseScript, Keys: s.keys, Args: []string{strconv.Itoa(permits), s.c.pub()}}).
		OnComplete(func(_ resp.Value, err error) {
			if err != nil && !s.c.closed.Load() {
				s.c.log.Warn("rlock: returning permits taken for an abandoned acquire failed", "semaphore", s.name, "err", err)
			}
		})
}

// Acquire takes permits, waiting as long as ctx allows until that many are available. It returns ctx's error when
// ctx ended first (permits taken in flight are given back). Safe for concurrent use.
func (s *Semaphore) Acquire(ctx context.Context, permits int) error {
	if err := inCallback(); err != nil {
		return err
	}
	w, fut := s.acquire(ctx, "Semaphore.Acquire", permits, -1)
	_, err := waitSync(ctx, w, fut)
	return err
}

// AcquireAsync is the asynchronous form of Acquire. It starts no goroutine; when ctx ends first the future fails
// with ctx's error.
// Get's context bounds only the wait for the future: when Get gives up, the acquire goes on and permits granted
// later are the future's holder's. To abandon the acquire, cancel ctx (permits granted in flight are given back),
// and give back permits the future reports granted before the cancellation.
func (s *Semaphore) AcquireAsync(ctx context.Context, permits int) *future.Future[struct{}] {
	_, fut := s.acquire(ctx, "Semaphore.AcquireAsync", permits, -1)
	return fut
}

// TryAcquire takes permits if that many become available within wait (0: one attempt). It reports false when the
// wait ran out, and returns ctx's error when ctx ended first.
func (s *Semaphore) TryAcquire(ctx context.Context, permits int, wait time.Duration) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	if err := tryFormError("Semaphore.TryAcquire", wait); err != nil {
		return false, err
	}
	w, fut := s.acquire(ctx, "Semaphore.TryAcquire", permits, wait)
	return trySync(ctx, w, fut)
}

// TryAcquireAsync is the asynchronous form of TryAcquire.
// Get's context bounds only the wait for the future: when Get gives up, the acquire goes on and permits granted
// later are the future's holder's. To abandon the acquire, cancel ctx (permits granted in flight are given back),
// and give back permits the future reports granted before the cancellation.
func (s *Semaphore) TryAcquireAsync(ctx context.Context, permits int, wait time.Duration) *future.Future[bool] {
	if err := tryFormError("Semaphore.TryAcquireAsync", wait); err != nil {
		return future.Completed(false, err)
	}
	_, fut := s.acquire(ctx, "Semaphore.TryAcquireAsync", permits, wait)
	return tryAsync(fut)
}

// Release returns permits and wakes the waiters they can satisfy. Anyone may release, also permits it did not
// take (Redisson's semantics). It waits for the server's answer; a release that failed on the transport is not
// resent unless it was never sent (it is not idempotent). Safe for concurrent use.
func (s *Semaphore) Release(ctx context.Context, permits int) error {
	if err := inCallback(); err != nil {
		return err
	}
	_, err := s.ReleaseAsync(ctx, permits).Get(ctx)
	return err
}

// ReleaseAsync is the asynchronous form of Release.
func (s *Semaphore) ReleaseAsync(ctx context.Context, permits int) *future.Future[struct{}] {
	if err := s.checkCtx("Semaphore.Release", ctx); err != nil {
		return future.Completed(struct{}{}, err)
	}
	if permits <= 0 {
		return future.Completed(struct{}{}, permitsError("Semaphore.Release", int64(permits)))
	}
	return future.Then(s.c.callOnce(ctx, conn.Cmd{Script: semReleaseScript, Keys: s.keys, Args: []string{strconv.Itoa(permits), s.c.pub()}}),
		func(_ resp.Value, err error) (struct{}, error) { return struct{}{}, err })
}

// AvailablePermits returns the number of permits available now (0 when the semaphore was never set). It blocks
// until the server answers or ctx ends.
func (s *Semaphore) AvailablePermits(ctx context.Context) (int64, error) {
	if err := inCallback(); err != nil {
		return 0, err
	}
	if err := s.checkCtx("Semaphore.AvailablePermits", ctx); err != nil {
		return 0, err
	}
	return intReply(s.c.call(ctx, conn.Cmd{Args: []string{"GET", s.name}}).Get(ctx))
}

// TrySetPermits sets the number of permits if the semaphore was never set, and reports whether it did; waiters
// are woken. permits must not be negative. It blocks until the server answers or ctx ends.
func (s *Semaphore) TrySetPermits(ctx context.Context, permits int) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	return s.TrySetPermitsTTL(ctx, permits, 0)
}

// TrySetPermitsTTL is TrySetPermits with a time to live for the semaphore (0: none), as Redisson's
// trySetPermits(permits, timeToLive).
func (s *Semaphore) TrySetPermitsTTL(ctx context.Context, permits int, ttl time.Duration) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	if err := s.checkCtx("Semaphore.TrySetPermits", ctx); err != nil {
		return false, err
	}
	if permits < 0 {
		return false, &ArgumentError{Op: "Semaphore.TrySetPermits", Arg: "permits", Value: strconv.Itoa(permits), Reason: "must not be negative"}
	}
	if ttl < 0 || (ttl > 0 && ttl < time.Millisecond) {
		return false, &ArgumentError{Op: "Semaphore.TrySetPermits", Arg: "ttl", Value: ttl.String(), Reason: "must be at least 1ms, or 0 for none"}
	}
	n, err := intReply(s.c.call(ctx, conn.Cmd{Script: semTrySetScript, Keys: s.keys,
		Args: []string{strconv.Itoa(permits), millis(ttl), s.c.pub()}}).Get(ctx))
	return n == 1, err
}

// AddPermits adds permits (negative: removes them; the number available may then fall below zero until releases
// bring it back) and returns the number available afterwards. permits must not be zero. It is not resent after an
// ambiguous transport failure. It blocks until the server answers or ctx ends.
func (s *Semaphore) AddPermits(ctx context.Context, permits int) (int64, error) {
	if err := inCallback(); err != nil {
		return 0, err
	}
	if err := s.checkCtx("Semaphore.AddPermits", ctx); err != nil {
		return 0, err
	}
	if permits == 0 {
		return 0, &ArgumentError{Op: "Semaphore.AddPermits", Arg: "permits", Value: "0", Reason: "must not be zero"}
	}
	return intReply(s.c.callOnce(ctx, conn.Cmd{Script: semAddScript, Keys: s.keys, Args: []string{strconv.Itoa(permits), s.c.pub()}}).Get(ctx))
}

// DrainPermits takes every available permit and returns how many it took. It blocks until the server answers or
// ctx ends.
func (s *Semaphore) DrainPermits(ctx context.Context) (int64, error) {
	if err := inCallback(); err != nil {
		return 0, err
	}
	if err := s.checkCtx("Semaphore.DrainPermits", ctx); err != nil {
		return 0, err
	}
	return intReply(s.c.callOnce(ctx, conn.Cmd{Script: semDrainScript, Keys: s.keys[:1]}).Get(ctx))
}

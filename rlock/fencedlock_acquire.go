package rlock

import (
	"context"
	"errors"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// The acquire path shared by the family's locks (fair, fenced, read and write): validate, resolve the owner, run
// the waiting engine (semaphore_wait.go) with the lock's script, and record each grant as a famHold before the
// caller's future completes. Named after the fenced lock, the simplest of them.

// famLocked is what an acquire of a family lock yields: the held context and, for a fenced lock, the token.
type famLocked struct {
	held  context.Context
	token int64
}

// famLockSpec describes one acquire of a family lock.
type famLockSpec struct {
	op      string
	name    string
	kind    famHoldKind
	channel string  // the channel releases are published on (the fair lock: the waiter's own)
	policy  famWake // whom a message wakes
	wait    time.Duration
	lease   time.Duration // 0 = the watchdog
	field   func(owner string) string
	prefix  func(owner string) string
	release famReleaseFunc
	// attempt builds the acquire command for owner with the lease (milliseconds); w gives the call's deadline.
	attempt func(owner, lease string, w *famWait) conn.Cmd
	// decode interprets the reply: granted with the hold count (and token), or refused with a wait bound.
	decode func(v resp.Value) (granted bool, count, token int64, retry time.Duration, err error)
	// gone, when set, tells the server that owner gave up waiting (the fair lock's queue).
	gone func(owner string)
	// channelFor, when set, derives the channel from the owner (the fair lock's per-waiter channel).
	channelFor func(owner string) string
}

// acquireLock starts an acquire. wait < 0 waits without bound (the Lock forms). It returns the waiter (nil when
// the call failed before starting) and the future.
func (f *family) acquireLock(ctx context.Context, s famLockSpec, watch bool) (*famWaiter[famLocked], *future.Future[famLocked]) {
	c := f.c
	fail := func(err error) (*famWaiter[famLocked], *future.Future[famLocked]) {
		return nil, future.Completed(famLocked{}, err)
	}
	if err := famCheck(c, s.op, s.name); err != nil {
		return fail(err)
	}
	lease, watchdog, err := famLeaseArgs(c, s.op, s.lease)
	if err != nil {
		return fail(err)
	}
	own, err := c.resolveOwner(ctx, s.op, true)
	if err != nil {
		return fail(err)
	}
	owner := own.id
	leaseArg := famMillis(lease)
	key := famHoldKey{name: s.name, owner: owner, kind: s.kind}
	field, prefix := owner, ""
	if s.field != nil {
		field = s.field(owner)
	}
	if s.prefix != nil {
		prefix = s.prefix(owner)
	}
	channel := s.channel
	if s.channelFor != nil {
		channel = s.channelFor(owner)
	}
	start := c.now()
	try := func(w *famWait) *future.Future[famTry[famLocked]] {
		sentAt := c.now()
		cmd := s.attempt(owner, leaseArg, w)
		return future.Then(f.callOnce(background, cmd.Script, cmd.Keys, cmd.Args...),
			func(v resp.Value, err error) (famTry[famLocked], error) {
				if err != nil {
					return famTry[famLocked]{}, err
				}
				granted, count, token, retry, err := s.decode(v)
				if err != nil || !granted {
					return famTry[famLocked]{retry: retry}, err
				}
				f.mu.Lock()
				h, err := f.grantLocked(famGrant{key: key, field: field, prefix: prefix, release: s.release,
					parent: ctx, count: count, lease: lease, watchdog: watchdog, sentAt: sentAt, token: token})
				f.mu.Unlock()
				if err != nil {
					// Closed meanwhile (or the timer refused the hold's timeout): give the grant back.
					f.releaseOrphan(key, s.release, count)
					return famTry[famLocked]{}, err
				}
				c.obs.Acquired(AcquiredEvent{Name: s.name, Owner: owner, Wait: c.now() - start, Reentrant: count > 1})
				return famTry[famLocked]{ok: true, v: famLocked{held: h.held, token: token}}, nil
			})
	}
	var gone func()
	if s.gone != nil {
		gone = func() { s.gone(owner) }
	}
	undo := func(l famLocked) { f.unlockHeld(l.held) }
	return startWait(f, ctx, famWaitSpec{channel: channel, policy: s.policy, wait: s.wait}, try, undo, gone, watch)
}

// releaseOrphan releases count holds granted to an owner that no hold records.
func (f *family) releaseOrphan(key famHoldKey, rel famReleaseFunc, count int64) {
	if f.c.closed.Load() {
		return
	}
	cmd := rel(key.owner, count, famMillis(f.c.cfg.WatchdogTimeout))
	f.c.conn.Eval(background, cmd.Script, cmd.Keys, cmd.Args...).OnComplete(func(_ resp.Value, err error) {
		if err != nil {
			f.c.log.Warn("rlock: releasing an orphaned grant failed; it ends with its lease", "lock", key.name, "err", err)
		}
	})
}

// famLockSync runs an acquire to completion for a blocking call.
func famLockSync(ctx context.Context, w *famWaiter[famLocked], fut *future.Future[famLocked]) (famLocked, error) {
	return waitSync(ctx, w, fut)
}

// famHeldFuture maps an acquire's future to the held context.
func famHeldFuture(fut *future.Future[famLocked]) *future.Future[context.Context] {
	return future.Then(fut, func(l famLocked, err error) (context.Context, error) { return l.held, err })
}

// famDecodeCount decodes the lock-style acquire reply: a bulk string hold count = granted; an integer PTTL =
// refused.
func famDecodeCount(v resp.Value) (bool, int64, int64, time.Duration, error) {
	switch {
	case v.Type == resp.BulkString && !v.Null:
		n, err := v.AsInt64()
		return err == nil, n, 0, 0, err
	case v.Type == resp.Integer:
		return false, 0, 0, famPTTLRetry(v.Int), nil
	}
	return false, 0, 0, 0, &resp.TypeError{Want: "hold count or PTTL", Got: v.Type}
}

// famUnlockFor releases one hold of kind for the owner held carries.
func (f *family) unlockFor(held context.Context, op, name string, kind famHoldKind, rel famReleaseFunc) *future.Future[struct{}] {
	if err := famCheck(f.c, op, name); err != nil {
		return future.Completed(struct{}{}, err)
	}
	owner, err := famOwnerFor(f.c, held, op)
	if err != nil {
		return future.Completed(struct{}{}, err)
	}
	return f.unlock(famHoldKey{name: name, owner: owner, kind: kind}, rel)
}

// famBool runs a query whose integer reply is 1 for true.
func (f *family) queryBool(ctx context.Context, args ...string) *future.Future[bool] {
	return future.Then(f.call(ctx, nil, nil, args...), func(v resp.Value, err error) (bool, error) {
		n, err := famInt(v, err)
		return n == 1, err
	})
}

// queryHeld asks whether the owner held carries has field (a function of the owner) in the hash name.
func (f *family) queryHeld(held context.Context, op, name string, field func(string) string, count bool) *future.Future[int] {
	if err := famCheck(f.c, op, name); err != nil {
		return future.Completed(0, err)
	}
	own, err := f.c.resolveOwner(held, op, false)
	if err != nil || own.id == "" {
		return future.Completed(0, err)
	}
	fl := own.id
	if field != nil {
		fl = field(own.id)
	}
	return future.Then(f.call(background, nil, nil, "HGET", name, fl), func(v resp.Value, err error) (int, error) {
		n, err := famInt(v, err)
		if err == nil && !count && n > 0 {
			n = 1
		}
		return int(n), err
	})
}

// famTTL runs PTTL name with the package's special results.
func (f *family) ttl(ctx context.Context, op, name string) *future.Future[time.Duration] {
	if err := famCheck(f.c, op, name); err != nil {
		return future.Completed(time.Duration(0), err)
	}
	return future.Then(f.call(ctx, nil, nil, "PTTL", name), func(v resp.Value, err error) (time.Duration, error) {
		n, err := famInt(v, err)
		switch {
		case err != nil:
			return 0, err
		case n == -2:
			return TTLNoKey, nil
		case n == -1:
			return TTLNoExpiry, nil
		}
		return time.Duration(n) * time.Millisecond, nil
	})
}

// famIsServerError reports whether err is the server error reply with the given prefix.
func famIsServerError(err error, prefix string) bool {
	var se *resp.ServerError
	return errors.As(err, &se) && se.Prefix == prefix
}

package rlock

import (
	"context"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// Special results of RemainTimeToLive (and LockStatus.TTL), as Redis's PTTL reports them. They are not lengths of
// time: compare with them before using a TTL as one, and print a TTL with FormatTTL (fmt prints these two as
// "-2ns" and "-1ns"). A remaining time beyond a century (a key given an absurd expiry by something else than a lock
// client, such as PEXPIREAT near 2^63 ms) is reported as a century, so that adding it to a time cannot overflow.
const (
	// TTLNoKey means the lock does not exist (PTTL -2): nobody holds it.
	TTLNoKey time.Duration = -2
	// TTLNoExpiry means the key exists without an expiry (PTTL -1): not written by a lock client.
	TTLNoExpiry time.Duration = -1
)

// FormatTTL returns a RemainTimeToLive result as text that says what it means: "not locked" for TTLNoKey, "no
// expiry" for TTLNoExpiry, and the duration's String otherwise ("29.5s"). It does not block.
func FormatTTL(ttl time.Duration) string {
	switch ttl {
	case TTLNoKey:
		return "not locked"
	case TTLNoExpiry:
		return "no expiry"
	}
	return ttl.String()
}

// ForceUnlock deletes the lock whoever holds it and publishes the unlock message, as Redisson's forceUnlock. It
// reports whether there was a lock to delete. The holds this client had on it stop being renewed at once and their
// held contexts are cancelled with ErrLockLost; holders in other processes learn it at their next renewal. It
// blocks until the server answers or ctx ends; a transport failure is retried (deleting twice is harmless, but a
// retried call may then report false). Safe for concurrent use.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	return l.ForceUnlockAsync(ctx).Get(ctx)
}

// ForceUnlockAsync is the asynchronous form of ForceUnlock. Local holds are dropped before it returns.
func (l *Lock) ForceUnlockAsync(ctx context.Context) *future.Future[bool] {
	return l.forceUnlock(ctx, "ForceUnlock", conn.Cmd{Script: deletePublishScript, Keys: []string{l.name, channelName(l.name)},
		Args: []string{scripts.UnlockMessage, l.c.pub()}})
}

// IsLocked reports whether anyone holds the lock (EXISTS). It blocks until the server answers or ctx ends.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	return blocking(ctx, func() *future.Future[bool] { return l.IsLockedAsync(ctx) })
}

// IsLockedAsync is the asynchronous form of IsLocked.
func (l *Lock) IsLockedAsync(ctx context.Context) *future.Future[bool] {
	return l.isLocked(ctx, "IsLocked")
}

// IsHeldBy reports whether the owner held carries holds the lock on the server (HEXISTS), Redisson's
// isHeldByThread. A context without an owner holds nothing (false, without I/O). held only names the owner: the
// call is bounded by the transport's response timeout, not by held's cancellation, so a held context cancelled as
// lost can be asked. Use IsHeldByAsync and Get to bound it otherwise.
func (l *Lock) IsHeldBy(held context.Context) (bool, error) {
	return blocking(background, func() *future.Future[bool] { return l.IsHeldByAsync(held) })
}

// IsHeldByAsync is the asynchronous form of IsHeldBy.
func (l *Lock) IsHeldByAsync(held context.Context) *future.Future[bool] {
	return l.isHeldBy(held, "IsHeldBy")
}

// HoldCount returns how many holds the owner held carries has on the lock (HGET; 0 when none), Redisson's
// getHoldCount. Bounded like IsHeldBy.
func (l *Lock) HoldCount(held context.Context) (int, error) {
	return blocking(background, func() *future.Future[int] { return l.HoldCountAsync(held) })
}

// HoldCountAsync is the asynchronous form of HoldCount.
func (l *Lock) HoldCountAsync(held context.Context) *future.Future[int] {
	return l.holdCount(held, "HoldCount")
}

// RemainTimeToLive returns how long the lock's lease still runs (PTTL), TTLNoKey when nobody holds it, or
// TTLNoExpiry for a key without expiry. It blocks until the server answers or ctx ends.
func (l *Lock) RemainTimeToLive(ctx context.Context) (time.Duration, error) {
	return blocking(ctx, func() *future.Future[time.Duration] { return l.RemainTimeToLiveAsync(ctx) })
}

// RemainTimeToLiveAsync is the asynchronous form of RemainTimeToLive.
func (l *Lock) RemainTimeToLiveAsync(ctx context.Context) *future.Future[time.Duration] {
	return l.remainTimeToLive(ctx, "RemainTimeToLive")
}

// The queries every kind of lock shares.

// forceUnlock drops this client's holds of the lock (the handle's kind, and for a read-write lock both halves)
// and runs cmd, a force-unlock script answering 1 when there was a lock.
func (lo *lockObject) forceUnlock(ctx context.Context, op string, cmd conn.Cmd) *future.Future[bool] {
	if err := lo.checkCtx(op, ctx); err != nil {
		return future.Completed(false, err)
	}
	kinds := []holdKind{lo.kind}
	if lo.kind.rwLayout() {
		kinds = []holdKind{kindRead, kindWrite}
	}
	lo.c.dropAll(lo.sh, lo.name, kinds...)
	return future.Then(lo.c.call(ctx, cmd), func(v resp.Value, err error) (bool, error) {
		n, err := intReply(v, err)
		return n == 1, notLockError(lo.name, err)
	})
}

// isLocked asks whether the lock's key exists.
func (lo *lockObject) isLocked(ctx context.Context, op string) *future.Future[bool] {
	if err := lo.checkCtx(op, ctx); err != nil {
		return future.Completed(false, err)
	}
	return future.Then(lo.c.call(ctx, conn.Cmd{Args: []string{"EXISTS", lo.name}}), func(v resp.Value, err error) (bool, error) {
		n, err := intReply(v, err)
		return n == 1, err
	})
}

// holdCount asks how many holds of the handle's kind held's owner has (HGET of its field; 0 when none). A context
// without an owner holds nothing (0, without I/O). It is bounded by the transport's response timeout, not by held.
func (lo *lockObject) holdCount(held context.Context, op string) *future.Future[int] {
	if err := lo.check(op); err != nil {
		return future.Completed(0, err)
	}
	own, err := lo.c.resolveOwner(held, op, false)
	if err != nil || own.id == "" {
		return future.Completed(0, err)
	}
	return future.Then(lo.c.call(background, conn.Cmd{Args: []string{"HGET", lo.name, lo.kind.field(own.id)}}),
		func(v resp.Value, err error) (int, error) {
			n, err := intReply(v, err)
			return int(n), notLockError(lo.name, err)
		})
}

// isHeldBy reports whether held's owner holds the lock (holdCount > 0).
func (lo *lockObject) isHeldBy(held context.Context, op string) *future.Future[bool] {
	return future.Then(lo.holdCount(held, op), func(n int, err error) (bool, error) { return n > 0, err })
}

// remainTimeToLive asks the lock's PTTL, with TTLNoKey and TTLNoExpiry for the special answers.
func (lo *lockObject) remainTimeToLive(ctx context.Context, op string) *future.Future[time.Duration] {
	if err := lo.checkCtx(op, ctx); err != nil {
		return future.Completed(time.Duration(0), err)
	}
	return future.Then(lo.c.call(ctx, conn.Cmd{Args: []string{"PTTL", lo.name}}),
		func(v resp.Value, err error) (time.Duration, error) {
			n, err := intReply(v, err)
			switch {
			case err != nil:
				return 0, err
			case n == -2:
				return TTLNoKey, nil
			case n == -1:
				return TTLNoExpiry, nil
			}
			return serverMillis(n), nil
		})
}

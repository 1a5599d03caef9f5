package rlock

import (
	"context"
	"errors"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/timer"
)

// Special results of RemainTimeToLive, as Redis's PTTL reports them.
const (
	// TTLNoKey means the lock does not exist (PTTL -2): nobody holds it.
	TTLNoKey time.Duration = -2
	// TTLNoExpiry means the key exists without an expiry (PTTL -1): not written by a lock client.
	TTLNoExpiry time.Duration = -1
)

// ForceUnlock deletes the lock whoever holds it and publishes the unlock message, as Redisson's forceUnlock. It
// reports whether there was a lock to delete. The holds this client had on it stop being renewed at once and their
// held contexts are cancelled with ErrLockLost; holders in other processes learn it at their next renewal. It
// blocks until the server answers or ctx ends; a transport failure is retried (deleting twice is harmless, but a
// retried call may then report false). Safe for concurrent use.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	return l.ForceUnlockAsync(ctx).Get(ctx)
}

// ForceUnlockAsync is the asynchronous form of ForceUnlock. Local holds are dropped before it returns.
func (l *Lock) ForceUnlockAsync(ctx context.Context) *future.Future[bool] {
	c := l.c
	if err := l.check("ForceUnlock"); err != nil {
		return future.Completed(false, err)
	}
	var gone []*hold
	l.sh.mu.Lock()
	for k, h := range l.sh.holds {
		if k.name == l.name && h.state == holdHeld {
			c.dropLocked(l.sh, h)
			gone = append(gone, h)
		}
	}
	l.sh.mu.Unlock()
	for _, h := range gone {
		c.lost(h, ErrLockLost)
	}
	return future.Then(c.call(ctx, conn.Cmd{Script: forceUnlockScript, Keys: l.keys, Args: []string{unlockMessage}}),
		func(v resp.Value, err error) (bool, error) {
			n, err := intReply(v, err)
			return n == 1, err
		})
}

// IsLocked reports whether anyone holds the lock (EXISTS). It blocks until the server answers or ctx ends.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) { return l.IsLockedAsync(ctx).Get(ctx) }

// IsLockedAsync is the asynchronous form of IsLocked.
func (l *Lock) IsLockedAsync(ctx context.Context) *future.Future[bool] {
	if err := l.check("IsLocked"); err != nil {
		return future.Completed(false, err)
	}
	return future.Then(l.c.call(ctx, conn.Cmd{Args: []string{"EXISTS", l.name}}), func(v resp.Value, err error) (bool, error) {
		n, err := intReply(v, err)
		return n == 1, err
	})
}

// IsHeldBy reports whether the owner held carries holds the lock on the server (HEXISTS), Redisson's
// isHeldByThread. A context without an owner holds nothing (false, without I/O). held only names the owner: the
// call is bounded by the transport's response timeout, not by held's cancellation, so a held context cancelled as
// lost can be asked. Use IsHeldByAsync and Get to bound it otherwise.
func (l *Lock) IsHeldBy(held context.Context) (bool, error) {
	return l.IsHeldByAsync(held).Get(background)
}

// IsHeldByAsync is the asynchronous form of IsHeldBy.
func (l *Lock) IsHeldByAsync(held context.Context) *future.Future[bool] {
	if err := l.check("IsHeldBy"); err != nil {
		return future.Completed(false, err)
	}
	own, err := l.c.resolveOwner(held, "IsHeldBy", false)
	if err != nil || own.id == "" {
		return future.Completed(false, err)
	}
	return future.Then(l.c.call(background, conn.Cmd{Args: []string{"HEXISTS", l.name, own.id}}),
		func(v resp.Value, err error) (bool, error) {
			n, err := intReply(v, err)
			return n == 1, err
		})
}

// HoldCount returns how many holds the owner held carries has on the lock (HGET; 0 when none), Redisson's
// getHoldCount. Bounded like IsHeldBy.
func (l *Lock) HoldCount(held context.Context) (int, error) {
	return l.HoldCountAsync(held).Get(background)
}

// HoldCountAsync is the asynchronous form of HoldCount.
func (l *Lock) HoldCountAsync(held context.Context) *future.Future[int] {
	if err := l.check("HoldCount"); err != nil {
		return future.Completed(0, err)
	}
	own, err := l.c.resolveOwner(held, "HoldCount", false)
	if err != nil || own.id == "" {
		return future.Completed(0, err)
	}
	return future.Then(l.c.call(background, conn.Cmd{Args: []string{"HGET", l.name, own.id}}),
		func(v resp.Value, err error) (int, error) {
			n, err := intReply(v, err)
			if errors.Is(err, resp.ErrNil) {
				return 0, nil
			}
			return int(n), err
		})
}

// RemainTimeToLive returns how long the lock's lease still runs (PTTL), TTLNoKey when nobody holds it, or
// TTLNoExpiry for a key without expiry. It blocks until the server answers or ctx ends.
func (l *Lock) RemainTimeToLive(ctx context.Context) (time.Duration, error) {
	return l.RemainTimeToLiveAsync(ctx).Get(ctx)
}

// RemainTimeToLiveAsync is the asynchronous form of RemainTimeToLive.
func (l *Lock) RemainTimeToLiveAsync(ctx context.Context) *future.Future[time.Duration] {
	if err := l.check("RemainTimeToLive"); err != nil {
		return future.Completed(time.Duration(0), err)
	}
	return future.Then(l.c.call(ctx, conn.Cmd{Args: []string{"PTTL", l.name}}),
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
			return time.Duration(n) * time.Millisecond, nil
		})
}

// check validates the handle and the client for a call.
func (l *Lock) check(op string) error {
	if l.name == "" {
		return nameError(op)
	}
	if l.c.closed.Load() {
		return ErrClosed
	}
	return nil
}

// call runs an idempotent command (a query, a force unlock), retrying transport failures up to RetryAttempts
// times after RetryDelay. ctx bounds each attempt and the retries.
func (c *Client) call(ctx context.Context, cmd conn.Cmd) *future.Future[resp.Value] {
	p := future.NewPromise[resp.Value]()
	c.callAttempt(ctx, cmd, p, 0)
	return p.Future()
}

func (c *Client) callAttempt(ctx context.Context, cmd conn.Cmd, p *future.Promise[resp.Value], n int) {
	var f *future.Future[resp.Value]
	if cmd.Script != nil {
		f = c.conn.Eval(ctx, cmd.Script, cmd.Keys, cmd.Args...)
	} else {
		f = c.conn.Do(ctx, cmd.Args...)
	}
	f.OnComplete(func(v resp.Value, err error) {
		if err != nil && n < c.cfg.RetryAttempts && !c.closed.Load() && ctx.Err() == nil &&
			(errors.Is(err, conn.ErrUnavailable) || errors.Is(err, conn.ErrConnLost)) {
			_, terr := c.timer.NewTimeout(timer.TaskFunc(func(*timer.Timeout) { c.callAttempt(ctx, cmd, p, n+1) }),
				c.cfg.RetryDelay)
			if terr == nil {
				return
			}
		}
		p.Complete(v, c.mapErr(err))
	})
}

package rlock

import (
	"context"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// CountDownLatch is Redisson's RCountDownLatch: a count in the STRING <name> that callers count down; awaiters are
// released when it reaches zero (the key is then deleted). Unlike java.util.concurrent's latch, the count can be
// set again (TrySetCount) once the latch is open. Awaiters are woken through
// redisson_countdownlatch__channel__{name}: "0" when the count reached zero, "1" when a count was set or the latch
// deleted.
//
// Obtain it with Client.CountDownLatch; it is cheap, sends nothing until used, and is safe for concurrent use.
type CountDownLatch struct {
	object
	keys []string // {name, channel}
}

// CountDownLatch returns a handle on the latch called name. It does no I/O; an empty name is reported by the
// handle's methods as an *ArgumentError.
func (c *Client) CountDownLatch(name string) *CountDownLatch {
	return &CountDownLatch{object: c.newObject(name), keys: []string{name, latchChannelName(name)}}
}

// Name returns the latch's name (its Redis key).
func (l *CountDownLatch) Name() string { return l.name }

// TrySetCount sets the count if the latch is open (no count set), and reports whether it did. count must be
// positive. It blocks until the server answers or ctx ends.
func (l *CountDownLatch) TrySetCount(ctx context.Context, count int64) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	if err := l.checkCtx("CountDownLatch.TrySetCount", ctx); err != nil {
		return false, err
	}
	if count <= 0 {
		return false, &ArgumentError{Op: "CountDownLatch.TrySetCount", Arg: "count", Value: strconv.FormatInt(count, 10), Reason: "must be positive"}
	}
	n, err := intReply(l.c.call(ctx, conn.Cmd{Script: latchTrySetScript, Keys: l.keys,
		Args: []string{strconv.FormatInt(count, 10), scripts.LatchSetMessage, l.c.pub()}}).Get(ctx))
	return n == 1, err
}

// CountDown decrements the count; at zero the latch opens and every awaiter is released. Counting down an open
// latch does nothing. It returns the count afterwards. It is not resent after an ambiguous transport failure (a
// second decrement would count twice). It blocks until the server answers or ctx ends.
func (l *CountDownLatch) CountDown(ctx context.Context) (int64, error) {
	if err := inCallback(); err != nil {
		return 0, err
	}
	return l.CountDownAsync(ctx).Get(ctx)
}

// CountDownAsync is the asynchronous form of CountDown.
func (l *CountDownLatch) CountDownAsync(ctx context.Context) *future.Future[int64] {
	if err := l.checkCtx("CountDownLatch.CountDown", ctx); err != nil {
		return future.Completed(int64(0), err)
	}
	return future.Then(l.c.callOnce(ctx, conn.Cmd{Script: latchCountDownScript, Keys: l.keys, Args: []string{scripts.LatchZeroMessage, l.c.pub()}}), intReply)
}

// Count returns the current count (0 when open). It blocks until the server answers or ctx ends.
func (l *CountDownLatch) Count(ctx context.Context) (int64, error) {
	if err := inCallback(); err != nil {
		return 0, err
	}
	if err := l.checkCtx("CountDownLatch.Count", ctx); err != nil {
		return 0, err
	}
	return intReply(l.c.call(ctx, conn.Cmd{Args: []string{"GET", l.name}}).Get(ctx))
}

// Delete opens the latch whatever its count (releasing every awaiter) and reports whether it was closed. It blocks
// until the server answers or ctx ends.
func (l *CountDownLatch) Delete(ctx context.Context) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	if err := l.checkCtx("CountDownLatch.Delete", ctx); err != nil {
		return false, err
	}
	n, err := intReply(l.c.call(ctx, conn.Cmd{Script: deletePublishScript, Keys: l.keys, Args: []string{scripts.LatchSetMessage, l.c.pub()}}).Get(ctx))
	return n == 1, err
}

func (l *CountDownLatch) await(ctx context.Context, op string, wait time.Duration) (*waiter, *future.Future[struct{}]) {
	if err := l.checkCtx(op, ctx); err != nil {
		return nil, future.Completed(struct{}{}, err)
	}
	get := []string{"GET", l.name}
	spec := &permitSpec[struct{}]{
		attempt: func() (*conn.Script, []string, []string) { return nil, nil, get },
		decode: func(v resp.Value, err error) (outcome, struct{}) {
			n, err := intReply(v, err)
			if err != nil {
				return outcome{err: err}, struct{}{}
			}
			// A latch has no lease to wait for: a closed latch is looked at again after recheckBound.
			return outcome{granted: n <= 0, bound: recheckBound}, struct{}{}
		},
	}
	pc := newPermitCall(l.sh, spec, l.keys[1], wakeAll, 1, wait)
	pc.resend = true // a GET may be sent again whatever happened to it
	return pc.run(ctx)
}

// Await blocks until the latch is open (count zero) or ctx ends (then ctx's error). It costs no polling: awaiters
// wait for the latch's channel. Safe for concurrent use.
func (l *CountDownLatch) Await(ctx context.Context) error {
	if err := inCallback(); err != nil {
		return err
	}
	w, fut := l.await(ctx, "CountDownLatch.Await", -1)
	_, err := waitSync(ctx, w, fut)
	return err
}

// AwaitAsync is the asynchronous form of Await. It starts no goroutine.
func (l *CountDownLatch) AwaitAsync(ctx context.Context) *future.Future[struct{}] {
	_, fut := l.await(ctx, "CountDownLatch.AwaitAsync", -1)
	return fut
}

// AwaitTimeout waits at most timeout (0: checks once) for the latch to open and reports whether it did; ctx's
// error when ctx ended first.
func (l *CountDownLatch) AwaitTimeout(ctx context.Context, timeout time.Duration) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	if err := tryFormError("CountDownLatch.AwaitTimeout", timeout); err != nil {
		return false, err
	}
	w, fut := l.await(ctx, "CountDownLatch.AwaitTimeout", timeout)
	return trySync(ctx, w, fut)
}

// AwaitTimeoutAsync is the asynchronous form of AwaitTimeout.
func (l *CountDownLatch) AwaitTimeoutAsync(ctx context.Context, timeout time.Duration) *future.Future[bool] {
	if err := tryFormError("CountDownLatch.AwaitTimeoutAsync", timeout); err != nil {
		return future.Completed(false, err)
	}
	_, fut := l.await(ctx, "CountDownLatch.AwaitTimeoutAsync", timeout)
	return tryAsync(fut)
}

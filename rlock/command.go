package rlock

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// Commands that do not wait for anything but their reply (queries, force unlocks, releases of permits, counts
// down), and the retries of every command of the package.

// call runs cmd, which is safe to send again (a query, an idempotent or conditional script), resending it after a
// transport failure — also one after which it may have run — up to RetryAttempts times after RetryDelay. ctx
// bounds each attempt and the retries.
func (c *Client) call(ctx context.Context, cmd conn.Cmd) *future.Future[resp.Value] {
	p := future.NewPromise[resp.Value]()
	c.callAttempt(ctx, cmd, p, 0, true)
	return p.Future()
}

// callOnce runs cmd, which must not run twice (a count-down, a permit release): it is resent only when it was
// never sent (conn.ErrUnavailable).
func (c *Client) callOnce(ctx context.Context, cmd conn.Cmd) *future.Future[resp.Value] {
	p := future.NewPromise[resp.Value]()
	c.callAttempt(ctx, cmd, p, 0, false)
	return p.Future()
}

func (c *Client) callAttempt(ctx context.Context, cmd conn.Cmd, p *future.Promise[resp.Value], n int, idempotent bool) {
	var f *future.Future[resp.Value]
	if cmd.Script != nil {
		f = c.conn.Eval(ctx, cmd.Script, cmd.Keys, cmd.Args...)
	} else {
		f = c.conn.Do(ctx, cmd.Args...)
	}
	f.OnComplete(func(v resp.Value, err error) {
		if err != nil && n < c.cfg.RetryAttempts && !c.closed.Load() && ctx.Err() == nil &&
			(errors.Is(err, conn.ErrUnavailable) || (idempotent && errors.Is(err, conn.ErrConnLost))) {
			if c.after(c.cfg.RetryDelay, func(closed bool) {
				if closed {
					complete(c.log, p, resp.Value{}, ErrClosed)
					return
				}
				c.callAttempt(ctx, cmd, p, n+1, idempotent)
			}) {
				return
			}
		}
		if err == nil && v.Type == resp.Array && cmd.Script != nil && len(cmd.Keys) > 0 && publishes(cmd.Script) {
			// Only a publishing script's reply is unwrapped: another's (Status's) may hold any text.
			v = c.published(nil, cmd.Keys[0], v)
		}
		complete(c.log, p, v, c.mapErr(err))
	})
}

// intReply decodes an integer reply; a nil reply (a missing key) is 0.
func intReply(v resp.Value, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	n, err := v.AsInt64()
	if errors.Is(err, resp.ErrNil) {
		return 0, nil
	}
	return n, err
}

// isServerError reports whether err is the server error reply with the given prefix (a script's
// redis.error_reply).
func isServerError(err error, prefix string) bool {
	var se *resp.ServerError
	return errors.As(err, &se) && se.Prefix == prefix
}

// millis formats a duration as whole milliseconds for a script argument.
func millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// trySync completes a blocking Try call that reports a bool (see tried); w is nil when the call failed before it
// started.
func trySync[T any](ctx context.Context, w *waiter, f *future.Future[T]) (bool, error) {
	_, err := waitSync(ctx, w, f)
	return tried(err)
}

// tryAsync maps an async Try call's future to the bool it reports (see tried).
func tryAsync[T any](f *future.Future[T]) *future.Future[bool] {
	return future.Then(f, func(_ T, err error) (bool, error) { return tried(err) })
}

// tried maps the outcome of a Try call that reports a bool to (acquired, error): running out of wait is false, not
// an error.
func tried(err error) (bool, error) {
	if errors.Is(err, ErrNotAcquired) {
		return false, nil
	}
	return err == nil, err
}

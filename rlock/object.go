package rlock

import (
	"context"

	"github.com/locksmith-go/locksmith/future"
)

// object is what every handle of the package shares — locks, semaphores, latches, rate limiters: its client, its
// name (its Redis key), and the shard that keeps its local state (held locks, waiter queues), chosen by the name
// so that a lock's holds and its waiters meet under one mutex. Handles are cheap values; the client keeps the
// state.
type object struct {
	c    *Client
	name string
	sh   *shard
}

func (c *Client) newObject(name string) object { return object{c: c, name: name, sh: c.shard(name)} }

// check validates the handle and the client for a call: bad input is reported before anything is sent.
func (o *object) check(op string) error {
	if o.name == "" {
		return nameError(op)
	}
	if o.c.closed.Load() {
		return ErrClosed
	}
	return nil
}

// client returns the handle's Client (MultiLock and RedLock reach their locks' Clients through it).
func (o *object) client() *Client { return o.c }

// checkCtx is check for a call bounded by ctx, which must not be nil.
func (o *object) checkCtx(op string, ctx context.Context) error {
	if ctx == nil {
		return nilContextError(op)
	}
	return o.check(op)
}

// inCallback is the first check of a blocking call: inside a future callback or an Observer method it fails with
// ErrInCallback, before anything is sent, so that the refused call has no effect (future.InCallback: one atomic
// load while no callback runs).
func inCallback() error {
	if future.InCallback() {
		return ErrInCallback
	}
	return nil
}

// blocking is a blocking call made of its asynchronous form and a wait: inside a future callback or an Observer
// method it fails with ErrInCallback before async sends anything (inCallback), as every blocking call of the
// package does, instead of sending and then returning whatever Get finds.
func blocking[T any](ctx context.Context, async func() *future.Future[T]) (T, error) {
	if err := inCallback(); err != nil {
		var zero T
		return zero, err
	}
	return async().Get(ctx)
}

package integration

import (
	"context"
	"time"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/rlock"
)

// The locks the consistency test uses, and how it reaches each kind.

// ccLockAPI is what every lock kind of the test offers.
type ccLockAPI interface {
	Lock(ctx context.Context) (context.Context, error)
	LockAsync(ctx context.Context) *future.Future[context.Context]
	LockLease(ctx context.Context, lease time.Duration) (context.Context, error)
	TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error)
	Unlock(held context.Context) error
}

// ccTarget is one lock the workers use: its name (the server's hash), how to reach it through a client, and
// whether its holds are write holds (field "<owner>:write").
type ccTarget struct {
	name   string
	handle func(c *rlock.Client) ccLockAPI
	write  bool
}

var ccTargets = []ccTarget{
	{name: "cc:plain:0", handle: func(c *rlock.Client) ccLockAPI { return c.Lock("cc:plain:0") }},
	{name: "cc:plain:1", handle: func(c *rlock.Client) ccLockAPI { return c.Lock("cc:plain:1") }},
	{name: "cc:fair", handle: func(c *rlock.Client) ccLockAPI { return c.FairLock("cc:fair") }},
	{name: "cc:fenced", handle: func(c *rlock.Client) ccLockAPI { return ccFenced{c.FencedLock("cc:fenced")} }},
	{name: "cc:rw", handle: func(c *rlock.Client) ccLockAPI { return c.ReadWriteLock("cc:rw").ReadLock() }},
	{name: "cc:rw", handle: func(c *rlock.Client) ccLockAPI { return c.ReadWriteLock("cc:rw").WriteLock() }, write: true},
}

// ccNames are the hashes the checker compares.
var ccNames = []string{"cc:plain:0", "cc:plain:1", "cc:fair", "cc:fenced", "cc:rw"}

// ccFenced is a FencedLock seen as the other kinds: its tokens are left out.
type ccFenced struct{ l *rlock.FencedLock }

func (f ccFenced) Lock(ctx context.Context) (context.Context, error) {
	held, _, err := f.l.Lock(ctx)
	return held, err
}

func (f ccFenced) LockAsync(ctx context.Context) *future.Future[context.Context] {
	return future.Then(f.l.LockAsync(ctx), func(v rlock.Fence, err error) (context.Context, error) { return v.Held, err })
}

func (f ccFenced) LockLease(ctx context.Context, lease time.Duration) (context.Context, error) {
	held, _, err := f.l.LockLease(ctx, lease)
	return held, err
}

func (f ccFenced) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error) {
	held, _, err := f.l.TryLock(ctx, wait, lease)
	return held, err
}

func (f ccFenced) Unlock(held context.Context) error { return f.l.Unlock(held) }

package rlock

import (
	"context"
	"errors"
	"time"
)

// Run runs fn under the lock, in the spirit of the executeInLock helpers written around Redisson's RLock (lock,
// run, unlock in a finally block): it acquires the lock with the watchdog (blocking like Lock), calls fn with the
// held context, and always releases the lock afterwards, also when fn panics (the panic then continues). It returns
// fn's error, joined (errors.Join) with the release's error when the release failed — ErrNotHeld there means the
// lock was lost while fn ran, which fn could also have seen from context.Cause(held). When the lock cannot be
// acquired, fn is not called and the acquire's error is returned. Safe for concurrent use.
func (l *Lock) Run(ctx context.Context, fn func(held context.Context) error) error {
	held, err := l.Lock(ctx)
	if err != nil {
		return err
	}
	return l.runHeld(held, fn)
}

// TryRun is Run with TryLock's wait and lease: it returns ErrNotAcquired without calling fn when the lock could
// not be taken within wait.
func (l *Lock) TryRun(ctx context.Context, wait, lease time.Duration, fn func(held context.Context) error) error {
	held, err := l.TryLock(ctx, wait, lease)
	if err != nil {
		return err
	}
	return l.runHeld(held, fn)
}

func (l *Lock) runHeld(held context.Context, fn func(context.Context) error) (err error) {
	defer func() {
		if uerr := l.Unlock(held); uerr != nil {
			err = errors.Join(err, uerr)
		}
	}()
	return fn(held)
}

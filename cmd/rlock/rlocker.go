package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/rlock"
)

// cliClientName is the CLIENT SETNAME of rlock's connections (unless the URL sets client_name), so an operator can
// find them in CLIENT LIST.
const cliClientName = "rlock-cli"

// rlockLocker is the locker over the rlock library.
type rlockLocker struct {
	c *rlock.Client
}

var _ locker = (*rlockLocker)(nil)

// dialConfig turns the -addr URL and the -watchdog flag into the library's configuration.
func dialConfig(addr string, watchdog time.Duration) (rlock.Config, error) {
	cc, err := conn.ParseURL(addr)
	if err != nil {
		return rlock.Config{}, err
	}
	if cc.ClientName == "" {
		cc.ClientName = cliClientName
	}
	if cc.PoolSize == 0 {
		// One short-lived process issues a handful of commands: one command connection (plus the pub/sub one a
		// waiter opens) is plenty, and it keeps the server's client list short.
		cc.PoolSize = 1
	}
	return rlock.Config{Conn: cc, WatchdogTimeout: watchdog}, nil
}

// dialRlock connects to Redis. It blocks for at most the dial timeout (URL option dial_timeout).
func dialRlock(cfg rlock.Config) (locker, error) {
	c, err := rlock.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	return &rlockLocker{c: c}, nil
}

// Acquire implements locker with TryLock (bounded wait), Lock (watchdog) or LockLease (fixed lease).
func (r *rlockLocker) Acquire(ctx context.Context, a acquisition) (context.Context, string, error) {
	if a.Owner != "" {
		ctx = rlock.WithOwner(ctx, a.Owner)
	}
	lk := r.c.Lock(a.Name)
	var held context.Context
	var err error
	switch {
	case a.Wait >= 0:
		held, err = lk.TryLock(ctx, a.Wait, a.Lease)
	case a.Lease > 0:
		held, err = lk.LockLease(ctx, a.Lease)
	default:
		held, err = lk.Lock(ctx)
	}
	if err != nil {
		return nil, "", err
	}
	owner, _ := rlock.OwnerOf(held)
	return held, owner, nil
}

// Release implements locker with Unlock, bounded by ctx as well as by the library's own retry bound.
func (r *rlockLocker) Release(ctx context.Context, held context.Context, name string) error {
	_, err := r.c.Lock(name).UnlockAsync(held).Get(ctx)
	return err
}

// WithOwner implements locker.
func (r *rlockLocker) WithOwner(ctx context.Context, owner string) context.Context {
	return rlock.WithOwner(ctx, owner)
}

// ForceUnlock implements locker.
func (r *rlockLocker) ForceUnlock(ctx context.Context, name string) (bool, error) {
	return r.c.Lock(name).ForceUnlock(ctx)
}

// Close implements locker.
func (r *rlockLocker) Close() error { return r.c.Close() }

// Status implements locker with rlock's Lock.Status: the key's owners, hold counts, mode and TTL, read in one
// atomic step.
func (r *rlockLocker) Status(ctx context.Context, name string) (lockStatus, error) {
	st, err := r.c.Lock(name).Status(ctx)
	var nl *rlock.NotLockError
	if errors.As(err, &nl) {
		return lockStatus{}, &notLockError{name: name, detail: nl.Detail}
	}
	if err != nil {
		return lockStatus{}, err
	}
	out := lockStatus{Name: name, Type: "none", Mode: st.Mode, TTL: st.TTL}
	if st.Locked {
		out.Type = "hash"
	}
	for _, o := range st.Owners {
		out.Holders = append(out.Holders, holder{Owner: o.ID, Holds: o.Holds})
	}
	return out, nil
}

// notLockError reports a key that exists under the lock's name but is not a lock.
type notLockError struct {
	name   string
	detail string
}

// Error says what the key is and what to do.
func (e *notLockError) Error() string {
	return fmt.Sprintf("the key %q is not a lock (%s): another program uses this name; choose another lock name",
		e.name, e.detail)
}

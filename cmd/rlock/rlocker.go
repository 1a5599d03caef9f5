package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
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

// statusScript reads the key's type, PTTL and (for a hash) its fields in one atomic step, so the owners and the
// TTL shown belong to the same moment. rlock has no public call returning the owners of a lock (only IsLocked,
// IsHeldBy for one owner and RemainTimeToLive), so the CLI reads the hash itself through the transport.
var statusScript = conn.NewScript(`local t = redis.call('type', KEYS[1]).ok
if t ~= 'hash' then return {t, redis.call('pttl', KEYS[1])} end
return {t, redis.call('pttl', KEYS[1]), redis.call('hgetall', KEYS[1])}`)

// Status implements locker.
func (r *rlockLocker) Status(ctx context.Context, name string) (lockStatus, error) {
	if name == "" {
		return lockStatus{}, &rlock.ArgumentError{Op: "status", Arg: "name", Value: `""`, Reason: "must not be empty"}
	}
	v, err := r.c.Conn().Eval(ctx, statusScript, []string{name}).Get(ctx)
	if err != nil {
		return lockStatus{}, err
	}
	if len(v.Elems) < 2 {
		return lockStatus{}, fmt.Errorf("unexpected reply to the status script: %s", v)
	}
	st := lockStatus{Name: name}
	if st.Type, err = v.Elems[0].AsString(); err != nil {
		return lockStatus{}, err
	}
	ttl, err := v.Elems[1].AsInt64()
	if err != nil {
		return lockStatus{}, err
	}
	if ttl < 0 {
		st.TTL = time.Duration(ttl) // rlock.TTLNoKey or rlock.TTLNoExpiry, as PTTL reports them
	} else {
		st.TTL = time.Duration(ttl) * time.Millisecond
	}
	switch {
	case st.Type == "none":
		return st, nil
	case st.Type != "hash":
		return st, &notLockError{name: name, detail: "it holds a " + st.Type}
	case len(v.Elems) < 3:
		return lockStatus{}, fmt.Errorf("unexpected reply to the status script: %s", v)
	}
	fields := v.Elems[2].Elems
	for i := 0; i+1 < len(fields); i += 2 {
		f, val := fields[i].Str, fields[i+1].Str
		if f == "mode" {
			st.Mode = val // a Redisson read-write lock: mode read|write, owner fields as a lock's
			continue
		}
		n, perr := strconv.ParseInt(val, 10, 64)
		if perr != nil {
			return st, &notLockError{name: name, detail: fmt.Sprintf("field %q holds %q, not a hold count", f, val)}
		}
		st.Holders = append(st.Holders, holder{Owner: f, Holds: n})
	}
	slices.SortFunc(st.Holders, func(a, b holder) int { return strings.Compare(a.Owner, b.Owner) })
	return st, nil
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

package rlock

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// Acquiring a lock, of any kind: the plain lock, the fair and fenced locks, read and write holds. Every handle's
// Lock, LockLease and TryLock come here with their form (acquireForm); one call is a lockCall (lockcall.go), a
// waiter of the engine (waiter.go) whose grant becomes a hold (hold.go) before the caller's future completes. The
// kinds differ in their attempt script and its reply, the channel they wait on, and their wake rule: lockRules,
// which the plain lock does not need (its hot path is written out in lockCall.send).

// lockObject is what every lock handle shares: the client, the name, the layout of its holds, and, for the kinds
// other than the plain lock, the rules of its acquire.
type lockObject struct {
	object
	kind  holdKind
	rules lockRules // nil: the plain lock
}

// newLockObject returns the shared part of a handle on the lock name.
func (c *Client) newLockObject(name string, kind holdKind, rules lockRules) lockObject {
	return lockObject{object: c.newObject(name), kind: kind, rules: rules}
}

// A plain-layout handle keeps nothing but the lock's name: the names of its channel and queue, which every script
// takes, are made per call (plainKeys). A handle is often made per call (c.Lock(name).Lock(ctx)), or kept with
// each of a million held locks.

// lockRules is what a kind of lock other than the plain lock adds to the shared acquire.
type lockRules interface {
	// attempt builds one acquire attempt of lc.
	attempt(lc *lockCall) (s *conn.Script, keys, args []string)
	// decode interprets the attempt's reply, or the transport's or server's error.
	decode(v resp.Value, err error) outcome
	// channel is the channel lc is woken on: its queue.
	channel(lc *lockCall) string
	// wait sets lc's wake-up rule and flags.
	wait(lc *lockCall)
	// left tells the server that lc gave up waiting (the fair lock's queue); most kinds do nothing. then, when not
	// nil, runs once the server answered (at once when nothing is sent).
	left(lc *lockCall, then func())
	// ops names the kind's acquire operations.
	ops() *acquireOps
}

// acquireForm is the acquire method a caller chose. The form decides which waits and leases are arguments to
// refuse (argError), and names the operation (acquireOps) in errors and the Observer's events.
type acquireForm uint8

const (
	formLock      acquireForm = iota // Lock: waits as long as ctx allows, with the watchdog
	formLockLease                    // LockLease: waits as long as ctx allows, with a fixed lease (not 0)
	formTryLock                      // TryLock: waits at most wait (0: one attempt), lease 0 = the watchdog
	numForms
)

// argError checks the wait and lease that form f was given, named op, before anything else is looked at: 0 is
// not a LockLease's lease (it would be Lock's watchdog), a negative wait is not a TryLock's (it is not "forever").
// The other checks (a lease below MinLease, the name, the context) are the acquire's, for every form.
func (f acquireForm) argError(op string, wait, lease time.Duration) error {
	switch {
	case f == formLockLease && lease == 0:
		return leaseError(op, lease, "must be at least 1ms (use Lock for the watchdog)")
	case f == formTryLock:
		return tryFormError(op, wait)
	}
	return nil
}

// acquireOps names one type of handle's acquire operations, by form, blocking ([0]) or async ([1]): built once,
// so that naming an operation costs nothing.
type acquireOps [numForms][2]string

// newAcquireOps returns the operation names of a type of handle whose names start with typ ("FairLock.").
func newAcquireOps(typ string) *acquireOps {
	var ops acquireOps
	for f, form := range [numForms]string{"Lock", "LockLease", "TryLock"} {
		ops[f] = [2]string{typ + form, typ + form + "Async"}
	}
	return &ops
}

// name is form's operation, blocking or async.
func (ops *acquireOps) name(form acquireForm, async bool) string {
	if async {
		return ops[form][1]
	}
	return ops[form][0]
}

// The acquire operations of each type of lock handle, as errors and events name them.
var (
	plainOps  = newAcquireOps("")
	fairOps   = newAcquireOps("FairLock.")
	fencedOps = newAcquireOps("FencedLock.")
	readOps   = newAcquireOps("ReadLock.")
	writeOps  = newAcquireOps("WriteLock.")
)

// opOf names form's operation on this kind of lock, blocking or async, and checks the arguments the form takes
// (acquireForm.argError).
func (lo *lockObject) opOf(form acquireForm, async bool, wait, lease time.Duration) (string, error) {
	ops := plainOps
	if lo.rules != nil {
		ops = lo.rules.ops()
	}
	op := ops.name(form, async)
	return op, form.argError(op, wait, lease)
}

// acquire validates an acquire call and starts it; the call ends when ctx ends. wait < 0 means no bound; lease 0
// means the watchdog; async says that the caller does not wait with Get at once (a blocking call drives its
// attempts with its Get: syncLockCall). It returns the call (nil when it failed before starting) and its future.
func (lo *lockObject) acquire(ctx context.Context, op string, wait, lease time.Duration, async bool) (*lockCall, *future.Future[context.Context]) {
	return lo.acquireQueued(ctx, op, wait, lease, async, true)
}

// acquireQueued is acquire; queued false makes a plain lock's waiter wait without a place in the server's queue of
// waiters (a RedLock's component, whose rounds give up and start again: a place in each master's queue would
// outlive them and serve the masters in an order that keeps competing clients split). Such a waiter is woken by
// the unlock message, published when the lock goes free with nobody queued, and by its bound.
func (lo *lockObject) acquireQueued(ctx context.Context, op string, wait, lease time.Duration, async, queued bool) (*lockCall, *future.Future[context.Context]) {
	c := lo.c
	fail := func(err error) (*lockCall, *future.Future[context.Context]) {
		if c.observed {
			c.obs.AcquireFailed(AcquireFailedEvent{Name: lo.name, Outcome: acquireOutcome(err), Err: err, Ctx: ctx})
		}
		return nil, future.Completed[context.Context](nil, err)
	}
	switch {
	case lo.name == "":
		return fail(nameError(op))
	case c.cluster && !clusterSafeName(lo.name):
		return fail(clusterNameError(op, lo.name))
	case lease < 0 || (lease > 0 && lease < MinLease):
		return fail(leaseError(op, lease, "must be at least 1ms, or 0 for the watchdog"))
	case ctx == nil:
		return fail(nilContextError(op))
	case c.closed.Load():
		return fail(ErrClosed)
	case ctx.Err() != nil:
		return fail(ctx.Err())
	}
	own, err := c.resolveOwner(ctx, op, true)
	if err != nil {
		return fail(err)
	}
	lc := newLockCall(!async)
	lc.lo, lc.ctx, lc.owner, lc.fresh, lc.lease = lo, ctx, own.id, own.fresh, lease
	lc.init(lo.sh, lc, wait)
	if lease == 0 {
		lc.watchdog, lc.lease = true, c.cfg.WatchdogTimeout
	}
	lc.exclusive = lo.kind != kindRead
	if done := ctx.Done(); done != nil {
		// The shard's watch of ctx fails the future when ctx ends (start registers the call): a Get with ctx
		// waits for the future alone.
		lc.p.CancelledBy(done)
	}
	if lo.rules == nil {
		lc.rule, lc.serverQueue = wakeOne, queued
	} else {
		lo.rules.wait(lc)
	}
	if lc.serverQueue {
		lc.initQueueCall(own)
	}
	f := lc.p.Future()
	if c.observed {
		c.observeFailure(f, lo.name, lc.owner, lc.startAt, ctx)
	}
	lc.start(lc.startAt)
	return lc, f
}

// observeFailure reports the acquire whose future f is to the Observer if it fails, however it fails: the call's
// waiter failing it, or its context ending first (the future's own cancellation). It registers through Then,
// which keeps a blocking call's Get driving its attempts (OnComplete would hand them to the transport).
func (c *Client) observeFailure(f *future.Future[context.Context], name, owner string, start time.Duration,
	ctx context.Context) {
	future.Then(f, func(_ context.Context, err error) (struct{}, error) {
		if err != nil {
			c.obs.AcquireFailed(AcquireFailedEvent{Name: name, Owner: owner, Wait: c.now() - start,
				Outcome: acquireOutcome(err), Err: err, Ctx: ctx})
		}
		return struct{}{}, nil
	})
}

// lock runs an acquire to completion for a blocking call (every lock's Lock, LockLease and TryLock, by form):
// wait < 0 waits as long as ctx allows, lease 0 takes the watchdog. A grant that raced with the end of ctx is
// released.
func (lo *lockObject) lock(ctx context.Context, form acquireForm, wait, lease time.Duration) (context.Context, error) {
	op, err := lo.opOf(form, false, wait, lease)
	if err == nil {
		err = inCallback()
	}
	if err != nil {
		return nil, err
	}
	lc, f := lo.acquire(ctx, op, wait, lease, false)
	if lc == nil {
		return f.Get(ctx)
	}
	held, err := waitSync(ctx, &lc.waiter, f)
	if err == nil {
		// Done with lc (a failed call may still be referenced: it is left to the garbage collector).
		lc.refs.releaseLockCall(lc.sync)
	}
	return held, err
}

// lockAsync starts an acquire for an async call (every lock's LockAsync, LockLeaseAsync and TryLockAsync, by
// form).
func (lo *lockObject) lockAsync(ctx context.Context, form acquireForm, wait, lease time.Duration) *future.Future[context.Context] {
	op, err := lo.opOf(form, true, wait, lease)
	if err != nil {
		return future.Completed[context.Context](nil, err)
	}
	_, f := lo.acquire(ctx, op, wait, lease, true)
	return f
}

// clusterSafeName reports whether a lock's keys and channels share the slot of its name on a Redis Cluster. They
// always do unless the name contains "{" without a hash tag Redis accepts (a non-empty {...}): Redisson's naming
// rule then uses the name as it is after each prefix (prefix:name), and the prefixed names hash whole, elsewhere.
// Such a lock could be acquired (the acquire script names only the lock) but never released.
func clusterSafeName(name string) bool {
	if strings.IndexByte(name, '{') < 0 {
		return true
	}
	return conn.KeySlot(name) == conn.KeySlot(channelName(name))
}

func clusterNameError(op, name string) error {
	return &ArgumentError{Op: op, Arg: "name", Value: strconv.Quote(name), Reason: "on a Redis Cluster, a name " +
		"containing '{' needs a non-empty hash tag such as {orders}:42, so that the lock's keys share its slot"}
}

// tryFormError checks a Try call's wait: 0 makes one attempt, a negative one is an error (not "forever").
func tryFormError(op string, wait time.Duration) error {
	if wait < 0 {
		return waitError(op, wait)
	}
	return nil
}

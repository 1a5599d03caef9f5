package rlock

import (
	"errors"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// Replica-synced acquire (Config.SyncReplicas; Redisson's checkLockSyncedSlaves). Every acquire attempt of every
// lock kind goes out through lockCall.send; with the option on, it goes as the acquire script followed by WAIT on
// the same connection (conn.Client.SendAndWait), and a grant counts only once enough replicas acknowledged it.
//
// A grant that too few replicas acknowledged is given back before anything local records it: the call stays in
// its attempting state (for the waiting engine the attempt is still in flight), the grant is released with the
// conditional release of exactly that grant (the owner's hold count the script reported, so a retried release
// cannot release another hold), and then the call either sends a new attempt after RetryDelay — at most
// RetryAttempts times, and only when the call's wait leaves room for it — or fails with a *ReplicationError. No
// hold is created, no renewal registered and no observer event reported for such a grant.
//
// The plain lock's hand-off (an Unlock of this client granting the lock to the next local waiter in the release
// script) bypasses the acquire attempt, so it is switched off while the check is on: the release publishes, and
// the woken waiter attempts through send like any other.

// synced reports whether acquires wait for replicas: the option is on and the server did not turn out to lack
// WAIT.
func (c *Client) synced() bool { return c.cfg.SyncReplicas > 0 && !c.waitUnsupported.Load() }

// sendSynced sends one acquire attempt of lc followed by WAIT (see send).
func (lc *lockCall) sendSynced() {
	c := lc.sh.c
	var cmd conn.Cmd
	if lc.lo.rules == nil {
		k := plainKeys(lc.lo.name)
		cmd = conn.Cmd{Script: acquireScript, Keys: k[:], Args: []string{lc.leaseArg(), lc.owner, lc.attemptSpec(),
			c.pub()}}
	} else {
		s, keys, args := lc.lo.rules.attempt(lc)
		cmd = conn.Cmd{Script: s, Keys: keys, Args: args}
	}
	future.Follow(lc.relay(), c.conn.SendAndWait(background, cmd, c.cfg.SyncReplicas, c.cfg.SyncTimeout), lc.onSyncedReply)
}

// onSyncedReply settles an attempt sent with WAIT: a refusal or a failure as any attempt, a grant once enough
// replicas acknowledged it (or WAIT turned out to be unsupported: conn logged it, and later attempts go without).
func (lc *lockCall) onSyncedReply(r conn.WaitResult, err error) {
	sh, counted := lc.sh, lc.takeCounted()
	defer sh.attemptSettled(counted) // once the reply is settled (or its grant given back)
	if err == nil {
		r.Reply = sh.c.published(sh, lc.lo.name, r.Reply)
	}
	var o outcome
	switch {
	case lc.lo.rules != nil:
		o = lc.queuedOutcome(lc.lo.rules.decode(r.Reply, err), r.Reply)
	case err != nil:
		o = outcome{err: err}
	default:
		o = lc.queuedOutcome(parseAcquire(r.Reply), r.Reply)
	}
	if o.granted {
		switch {
		case r.WaitErr == nil && r.Replicas >= lc.sh.c.cfg.SyncReplicas:
		case errors.Is(r.WaitErr, conn.ErrWaitUnsupported):
			lc.sh.c.waitUnsupported.Store(true)
		default:
			lc.unsynced(o, r)
			return
		}
	}
	lc.settle(o, false)
}

// unsynced gives back a grant too few replicas acknowledged, then retries the call or fails it.
func (lc *lockCall) unsynced(o outcome, r conn.WaitResult) {
	c := lc.sh.c
	lc.syncMisses++
	rerr := &ReplicationError{Name: lc.lo.name, Wanted: c.cfg.SyncReplicas, Acked: r.Replicas,
		Timeout: c.cfg.SyncTimeout, Attempts: int(lc.syncMisses), Err: r.WaitErr}
	if r.WaitErr != nil {
		rerr.Acked = 0
	}
	kind, name, owner := lc.lo.kind, lc.lo.name, lc.owner
	s, keys, args := c.releaseCmd(kind, c.releaseKeys(kind, name, owner), owner, o.count, lc.leaseArg())
	// c.call resends after a transport failure: the release is conditional on o.count, so a resend of one that ran
	// changes nothing.
	c.call(background, conn.Cmd{Script: s, Keys: keys, Args: args}).OnComplete(func(_ resp.Value, err error) {
		rerr.Released = err == nil
		if err != nil {
			rerr.Err = errors.Join(rerr.Err, err)
			c.log.Warn("rlock: releasing a grant the replicas did not acknowledge failed; it ends with its lease",
				"lock", name, "owner", owner, "err", err)
		}
		lc.afterUnsynced(rerr)
	})
}

// afterUnsynced decides, once the unacknowledged grant was given back, between a new attempt after RetryDelay and
// failing the call with rerr. A call that cannot wait (TryLock with wait 0), whose wait ends before the retry, or
// whose retries are used up fails; so does one whose grant could not be released (a new attempt would re-enter
// that grant).
func (lc *lockCall) afterUnsynced(rerr *ReplicationError) {
	c, w := lc.sh.c, &lc.waiter
	if c.closed.Load() {
		lc.failUnsynced(ErrClosed)
		return
	}
	w.sh.mu.Lock()
	retry := rerr.Released && w.state == wAttempting && w.abandoned == nil && !w.noWait &&
		int(lc.syncMisses) <= c.cfg.RetryAttempts &&
		(w.deadline == 0 || c.now()+c.cfg.RetryDelay < w.deadline)
	w.sh.mu.Unlock()
	if !retry {
		lc.failUnsynced(rerr)
		return
	}
	ok := c.after(c.cfg.RetryDelay, func(closed bool) {
		if closed {
			lc.failUnsynced(ErrClosed)
			return
		}
		w.sh.mu.Lock()
		again := w.state == wAttempting && w.abandoned == nil
		if again {
			w.sentAt = c.now()
		}
		w.sh.mu.Unlock()
		if again {
			lc.send()
			return
		}
		lc.failUnsynced(rerr)
	})
	if !ok {
		lc.failUnsynced(ErrClosed)
	}
}

// failUnsynced ends the call with err (or with why it was abandoned meanwhile), as settle ends a failed attempt.
// It is not settle's error path, which would take the transport errors rerr may wrap for failures of the attempt
// itself (resending it, or releasing what it might have granted).
func (lc *lockCall) failUnsynced(err error) {
	w := &lc.waiter
	w.sh.mu.Lock()
	if w.takeLeaveDueLocked() {
		defer lc.sh.c.leaves.done() // after the departure started below has been counted
	}
	if w.state != wAttempting {
		w.sh.mu.Unlock() // Close took it away
		return
	}
	act := w.leaveLocked(false)
	if w.abandoned != nil {
		err = w.abandoned
	}
	w.sh.mu.Unlock()
	act.run()
	lc.left(nil)
	lc.fail(lc.sh.c.mapErr(err))
}

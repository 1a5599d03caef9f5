package integration

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/faultproxy"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// Ambiguous re-entry: Lock(held) is written, the server counts the hold (or never sees it), and the reply is lost.
// The client must learn the true count, and the Unlock that ends the caller's belief must leave no hold of that
// owner behind — or say that the server still holds it, and how many times.

// reentryRig is a client behind a proxy, holding the lock "re" once.
type reentryRig struct {
	srv  *redistest.Server
	px   *faultproxy.Proxy
	c    *rlock.Client
	l    *rlock.Lock
	ctx  context.Context
	held context.Context
}

// newReentryRig starts the rig; cfg sets the retries (the release of a lost grant waits RetryDelay: at 500 ms, long
// enough for a test to see the server's count first).
func newReentryRig(t *testing.T, pinned bool, cfg rlock.Config) *reentryRig {
	t.Helper()
	r := &reentryRig{srv: redistest.Start(t)}
	r.px = faultproxy.Start(t, r.srv.Addr())
	cfg.Conn = conn.Config{Addr: r.px.Addr(), ResponseTimeout: time.Second}
	c, err := rlock.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r.c, r.l, r.ctx = c, c.Lock("re"), ctxT(t, 30*time.Second)
	warmScripts(t, c, r.ctx)
	acq := r.ctx
	if pinned {
		acq = rlock.WithOwner(r.ctx, "7")
	}
	if r.held, err = r.l.Lock(acq); err != nil {
		t.Fatal(err)
	}
	return r
}

// serverCount is the hold count the server has for the holder's owner ("" when none).
func (r *reentryRig) serverCount(t *testing.T) string {
	t.Helper()
	return hgetall(t, r.srv, "re")[mustOwner(t, r.held)]
}

// reenterLost re-enters while fault keeps the reply from arriving, and checks the error.
func (r *reentryRig) reenterLost(t *testing.T, fault faultproxy.Direction, releasing bool) {
	t.Helper()
	r.px.Stall(fault)
	_, err := r.l.Lock(r.held)
	var ou *rlock.OutcomeUnknownError
	if !errors.As(err, &ou) || !errors.Is(err, conn.ErrConnLost) || ou.Releasing != releasing {
		t.Fatalf("re-entry = %v, want an *OutcomeUnknownError (Releasing %v) matching conn.ErrConnLost", err, releasing)
	}
}

// unlockFrees unlocks once and checks that nothing is left on the server and the held context ended.
func (r *reentryRig) unlockFrees(t *testing.T) {
	t.Helper()
	r.unlockLeavesNothing(t, r.l, "re", r.held)
	if cause := context.Cause(r.held); !errors.Is(cause, rlock.ErrReleased) {
		t.Fatalf("held context: cause %v, want ErrReleased", cause)
	}
	if s := r.c.Stats(); s.Held != 0 || s.OrphansExpired != 0 {
		t.Fatalf("Stats = %+v", s)
	}
}

// unansweredTry acquires l as the holder's owner with a 100 ms wait while the proxy withholds the attempt's reply
// on its connection: the wait runs out in flight, and the caller is told that the outcome is unknown while the
// attempt, which ran, is still pending (until its connection is reset at the response timeout).
func (r *reentryRig) unansweredTry(t *testing.T, l *rlock.Lock) {
	t.Helper()
	r.px.Withhold(faultproxy.Downstream)
	_, err := l.TryLock(r.held, 100*time.Millisecond, 10*time.Second)
	r.px.Restore()
	wantUnknownReleasing(t, err)
}

// wantUnknownReleasing checks that an acquire's outcome was unknown and that the client releases its grant.
func wantUnknownReleasing(t *testing.T, err error) {
	t.Helper()
	var ou *rlock.OutcomeUnknownError
	if !errors.As(err, &ou) || !ou.Releasing {
		t.Fatalf("acquire = %v, want an *OutcomeUnknownError (Releasing)", err)
	}
}

// orphanReleasedTo waits until the client released one orphaned grant and count reports want.
func (r *reentryRig) orphanReleasedTo(t *testing.T, count func() string, want string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); count() != want || r.c.Stats().OrphansReleased != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("the unanswered attempt's grant was not released: server count %q (want %q), %+v", count(),
				want, r.c.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// unlockLeavesNothing unlocks held once and checks that name is gone from the server and held has ended.
func (r *reentryRig) unlockLeavesNothing(t *testing.T, l *rlock.Lock, name string, held context.Context) {
	t.Helper()
	if err := l.Unlock(held); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if n, err := r.srv.DoInt(r.ctx, "EXISTS", name); err != nil || n != 0 {
		t.Fatalf("the lock is still on the server after the caller's only Unlock: %v", hgetall(t, r.srv, name))
	}
	if held.Err() == nil {
		t.Fatal("the held context is still live after the caller's only Unlock")
	}
}

// The re-entry ran (the server counted 2): the client releases that grant and learns the count is 1 again.
func TestAmbiguousReentryThatRanIsTakenBack(t *testing.T) {
	r := newReentryRig(t, false, rlock.Config{RetryDelay: 500 * time.Millisecond})
	r.reenterLost(t, faultproxy.Downstream, true)
	if got := r.serverCount(t); got != "2" {
		t.Fatalf("server count %q, want 2: the re-entry did not run", got)
	}
	r.px.Restore()
	eventually(t, 5*time.Second, "the lost re-entry to be released", func() bool { return r.serverCount(t) == "1" })
	if n, err := r.l.HoldCount(r.held); err != nil || n != 1 {
		t.Fatalf("HoldCount = %d, %v after the lost re-entry was taken back; want 1", n, err)
	}
	if s := r.c.Stats(); s.OrphansReleased != 1 {
		t.Fatalf("Stats = %+v, want one orphan released", s)
	}
	r.unlockFrees(t)
}

// The re-entry is held up in the proxy until after the client gave up on it, then runs: the release of the lost
// grant, sent after the retry delay, comes after it and takes it back.
func TestAmbiguousReentryThatRunsLateIsTakenBack(t *testing.T) {
	r := newReentryRig(t, false, rlock.Config{RetryDelay: 500 * time.Millisecond})
	r.reenterLost(t, faultproxy.Upstream, true)
	r.px.Restore() // the held-up re-entry goes through now
	eventually(t, 5*time.Second, "the late re-entry to be released", func() bool {
		return r.serverCount(t) == "1" && r.c.Stats().OrphansReleased == 1
	})
	r.unlockFrees(t)
}

// The re-entry never reaches the server (dropped with its connection in the proxy): the release of the lost grant
// finds the recorded count and changes nothing.
func TestAmbiguousReentryThatNeverRanChangesNothing(t *testing.T) {
	r := newReentryRig(t, false, rlock.Config{RetryDelay: 500 * time.Millisecond})
	r.reenterLost(t, faultproxy.Upstream, true)
	r.px.DropAll() // with the re-entry still held up in it
	r.px.Restore()
	if got := r.serverCount(t); got != "1" {
		t.Fatalf("server count %q, want 1", got)
	}
	r.unlockFrees(t)
}

// The caller unlocks at once, while the releases cannot get through: the release of the lost grant gives up after
// its retries (a release of the owner waits behind it), and the Unlock that ends the caller's belief releases the
// orphaned hold with the caller's once requests flow.
func TestUnlockRightAfterAnAmbiguousReentryLeavesNothing(t *testing.T) {
	r := newReentryRig(t, false, rlock.Config{RetryDelay: 100 * time.Millisecond, RetryAttempts: 1})
	r.reenterLost(t, faultproxy.Downstream, true) // the re-entry ran: the server counts 2
	r.px.Restore()
	r.px.Stall(faultproxy.Upstream) // from now on nothing reaches the server
	done := make(chan error, 1)
	go func() { done <- r.l.Unlock(r.held) }() // owned by the test: returns with the Unlock
	time.Sleep(2500 * time.Millisecond)        // the fault lasts 2.5 s: the releases sent meanwhile time out
	r.px.DropAll()                             // what is held up never runs
	r.px.Restore()
	if err := <-done; err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if n, err := r.srv.DoInt(r.ctx, "EXISTS", "re"); err != nil || n != 0 {
		t.Fatalf("the lock is still on the server after the caller's only Unlock: %v", hgetall(t, r.srv, "re"))
	}
	if cause := context.Cause(r.held); !errors.Is(cause, rlock.ErrReleased) {
		t.Fatalf("held context: cause %v, want ErrReleased", cause)
	}
	if s := r.c.Stats(); s.Held != 0 {
		t.Fatalf("Stats = %+v", s)
	}
}

// A pinned owner may hold the lock through other Clients too: the lost grant cannot be told from their holds, so
// it is left to the lease, and the Unlock that ends the caller's belief says that the server still holds it once.
func TestAmbiguousReentryOfAPinnedOwnerIsReportedByUnlock(t *testing.T) {
	r := newReentryRig(t, true, rlock.Config{RetryDelay: 500 * time.Millisecond})
	r.reenterLost(t, faultproxy.Downstream, false)
	r.px.Restore()
	if got := r.serverCount(t); got != "2" {
		t.Fatalf("server count %q, want 2", got)
	}
	err := r.l.Unlock(r.held)
	var still *rlock.StillHeldError
	if !errors.As(err, &still) || !errors.Is(err, rlock.ErrStillHeld) || still.Holds != 1 || still.Owner != mustOwner(t, r.held) {
		t.Fatalf("Unlock = %v, want a *StillHeldError with 1 hold of the owner", err)
	}
	if got := r.serverCount(t); got != "1" {
		t.Fatalf("server count %q after Unlock, want the 1 hold the error reports", got)
	}
	if cause := context.Cause(r.held); !errors.Is(cause, rlock.ErrReleased) {
		t.Fatalf("held context: cause %v, want ErrReleased", cause)
	}
	if s := r.c.Stats(); s.Held != 0 || s.OrphansExpired != 1 {
		t.Fatalf("Stats = %+v, want nothing held and one orphan left to expire", s)
	}
}

// A re-entry whose held context ends while its attempt is in flight (the lease runs out locally before the reply
// comes): the caller, who may well ignore the context a re-entry returns, must not end up holding a new hold
// unawares. The call fails like one made a moment later, and the re-entry's grant and the ended hold's own holds,
// whose lease the re-entry prolonged on the server, are released.
func TestReentryOfAHoldEndingInFlightLeavesNothing(t *testing.T) {
	srv := redistest.Start(t)
	px := faultproxy.Start(t, srv.Addr())
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: px.Addr(), ResponseTimeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := ctxT(t, 30*time.Second)
	l := c.Lock("ending")
	mustUnlock(t, l, mustLock(t, l, ctx)) // scripts loaded
	held, err := l.LockLease(ctx, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	px.SetLatency(faultproxy.Downstream, 700*time.Millisecond) // the reply comes after the lease's local end
	again, err := l.Lock(held)                                 // a watchdog re-entry: 30 s on the server
	px.Restore()
	if !errors.Is(err, context.Canceled) || again != nil {
		t.Fatalf("re-entry of a hold that ended in flight = %v, %v; want context.Canceled", again, err)
	}
	if held.Err() == nil {
		t.Fatal("the held context did not end with its lease")
	}
	eventually(t, 5*time.Second, "the re-entry's grant and the ended holds to be released", func() bool {
		n, err := srv.DoInt(ctx, "EXISTS", "ending")
		return err == nil && n == 0
	})
	if s := c.Stats(); s.Held != 0 {
		t.Fatalf("Stats = %+v, want nothing held", s)
	}
}

// A re-entry whose wait runs out in flight leaves its caller with an unknown outcome while it is still pending; it
// ran, and its reply is lost with its connection. Meanwhile the caller re-enters again on another connection, and
// that reply counts the lost grant too. The client must record only the hold its caller has: the lost grant is
// released, and the caller's two Unlocks (its first hold and the second re-entry) leave nothing behind.
func TestReentryBesideAnUnansweredReentryCountsOnlyItsOwnHold(t *testing.T) {
	r := newReentryRig(t, false, rlock.Config{RetryDelay: 100 * time.Millisecond})
	r.unansweredTry(t, r.l)
	if got := r.serverCount(t); got != "2" {
		t.Fatalf("server count %q, want 2: the re-entry did not run", got)
	}
	again, err := r.l.Lock(r.held) // on another connection: the first still awaits its reply
	if err != nil || again != r.held {
		t.Fatalf("second re-entry = %v, %v; want the held context", again, err)
	}
	// The first re-entry's connection is reset at its response timeout, and its grant released after RetryDelay.
	r.orphanReleasedTo(t, func() string { return r.serverCount(t) }, "2")
	if n, err := r.l.HoldCount(r.held); err != nil || n != 2 {
		t.Fatalf("HoldCount = %d, %v; want 2", n, err)
	}
	if err := r.l.Unlock(r.held); err != nil {
		t.Fatalf("first Unlock: %v", err)
	}
	r.unlockFrees(t)
}

// The same for a first hold: an owner that holds another lock (a held context of "re") acquires "nested", the
// attempt's wait runs out unanswered, and the caller tries again on another connection, which the first attempt's
// grant makes the owner's second hold on the server. The caller's one hold is what the client records: the lost
// grant is released, and one Unlock frees the lock.
func TestRetryBesideAnUnansweredAcquireCountsOnlyItsOwnHold(t *testing.T) {
	r := newReentryRig(t, false, rlock.Config{RetryDelay: 100 * time.Millisecond})
	l := r.c.Lock("nested")
	r.unansweredTry(t, l)
	owner := mustOwner(t, r.held)
	count := func() string { return hgetall(t, r.srv, "nested")[owner] }
	if got := count(); got != "1" {
		t.Fatalf("server count %q, want 1: the acquire did not run", got)
	}
	held, err := l.Lock(r.held)
	if err != nil {
		t.Fatalf("second acquire: %v", err)
	}
	r.orphanReleasedTo(t, count, "1")
	if n, err := l.HoldCount(held); err != nil || n != 1 {
		t.Fatalf("HoldCount = %d, %v; want 1", n, err)
	}
	r.unlockLeavesNothing(t, l, "nested", held)
}

// The release of an unanswered attempt's grant, for an owner that holds nothing here (the attempt failed before
// the caller tried again), expects the owner's only hold, which the retry's grant would be. The retry waits for it
// (or, sent before the failed attempt was settled, counts the grant as a re-entry's: the release then expects the
// retry's hold and the grant). Either way the server ends with the retry's one hold, and its Unlock leaves nothing.
// (Before, the release found two holds, one more than it expected, and left the grant to the Unlock.)
func TestRetryAfterAnUnansweredFirstHoldLeavesItsCallerOneHold(t *testing.T) {
	r := newReentryRig(t, false, rlock.Config{RetryDelay: 500 * time.Millisecond})
	l := r.c.Lock("nested")
	dialled := r.px.Accepted()
	r.unansweredTry(t, l)
	// At its response timeout (1 s) the attempt's connection is reset, which the client makes again at once; the
	// lost grant's release is due RetryDelay later.
	eventually(t, 5*time.Second, "the unanswered attempt's connection to be made again", func() bool {
		return r.px.Accepted() > dialled
	})
	held, err := l.Lock(r.held)
	if err != nil {
		t.Fatalf("second acquire: %v", err)
	}
	owner := mustOwner(t, r.held)
	r.orphanReleasedTo(t, func() string { return hgetall(t, r.srv, "nested")[owner] }, "1")
	if n, err := l.HoldCount(held); err != nil || n != 1 {
		t.Fatalf("HoldCount = %d, %v; want 1", n, err)
	}
	r.unlockLeavesNothing(t, l, "nested", held)
}

// A re-entry's wait runs out in flight, its caller unlocks its one hold while the attempt is still pending, and
// then the attempt's grant arrives. The client gives that grant back before the caller's release, so that the
// caller's Unlock ends the held context and leaves nothing on the server.
func TestUnlockBehindALateReentryGrantEndsTheHold(t *testing.T) {
	r := newReentryRig(t, false, rlock.Config{})
	r.px.Stall(faultproxy.Downstream) // replies wait in the proxy, within the response timeout (1 s)
	_, err := r.l.TryLock(r.held, 50*time.Millisecond, 0)
	wantUnknownReleasing(t, err)
	unlocked := r.l.UnlockAsync(r.held) // waits for the attempt in flight
	r.px.Restore()                      // the attempt's grant arrives, then the release's reply
	if _, err := unlocked.Get(r.ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if r.held.Err() == nil {
		t.Fatal("the held context is still live after the caller's only Unlock returned")
	}
	if n, err := r.srv.DoInt(r.ctx, "EXISTS", "re"); err != nil || n != 0 {
		t.Fatalf("the lock is still on the server after the caller's only Unlock: %v", hgetall(t, r.srv, "re"))
	}
	if s := r.c.Stats(); s.Held != 0 || s.OrphansReleased != 1 {
		t.Fatalf("Stats = %+v, want nothing held and one orphan released", s)
	}
}

// Two re-entries run and their replies are lost; the release of each lost grant waits its turn behind the other.
// Then the lock vanishes from the server (its key deleted, as an administrator or an expiry would): the first
// release finds the owner holding nothing, which ends the hold here, and the second, whose turn comes after the
// hold ended, goes out without a hold to go by. The client must survive its reply: the held context ends with
// ErrLockLost, no callback of the client panics, and the lock can be taken and released again at once.
func TestLostGrantReleasedAfterItsHoldEndedLeavesTheClientUsable(t *testing.T) {
	panics := &panicLog{}
	r := newReentryRig(t, false, rlock.Config{RetryDelay: 500 * time.Millisecond, Logger: slog.New(panics)})
	r.px.Stall(faultproxy.Downstream) // the re-entries run; their replies wait in the proxy
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := r.l.Lock(r.held)
			errs <- err
		}()
	}
	eventually(t, 5*time.Second, "both re-entries to run", func() bool { return r.serverCount(t) == "3" })
	for range 2 { // each reply is lost when its connection is reset at the response timeout (1 s)
		if err := <-errs; !errors.Is(err, conn.ErrConnLost) {
			t.Fatalf("re-entry = %v, want an unknown outcome matching conn.ErrConnLost", err)
		}
	}
	// The releases of the lost grants go after RetryDelay: the lock is gone before then.
	if n, err := r.srv.DoInt(r.ctx, "DEL", "re"); err != nil || n != 1 {
		t.Fatalf("DEL re = %d, %v", n, err)
	}
	r.px.Restore()
	// The first release ends the hold; the second goes RetryDelay later, and is the only script run then (the
	// hold's renewals ended with it).
	eventually(t, 5*time.Second, "the held context to end", func() bool { return r.held.Err() != nil })
	if cause := context.Cause(r.held); !errors.Is(cause, rlock.ErrLockLost) {
		t.Fatalf("held context: cause %v, want ErrLockLost", cause)
	}
	mark := callsOf(t, r.srv, "evalsha")
	eventually(t, 5*time.Second, "the second lost grant's release to run", func() bool {
		return callsOf(t, r.srv, "evalsha") > mark
	})
	// A shard left locked by a panicking callback would block the next call for good: bound the wait, and show
	// the panics the client recovered if it runs out.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("panics the client recovered: %q", panics.logged())
		}
	})
	within(t, "Lock and Unlock after the lost grants' releases", func() error {
		held, err := r.l.TryLock(r.ctx, time.Second, 0)
		if err == nil {
			err = r.l.Unlock(held)
		}
		return err
	})
	if p := panics.logged(); len(p) != 0 {
		t.Fatalf("the client recovered panics: %q", p)
	}
	if s := r.c.Stats(); s.Held != 0 {
		t.Fatalf("Stats = %+v, want nothing held", s)
	}
}

// Two re-entries never reach the server (dropped with their connection in the proxy), so neither grant was made.
// The release of the first lost grant finds the owner's one hold where it expected three; the second's grant is
// still counted while its release waits its turn. It must then find one hold where it expects two, and change
// nothing: the caller's hold stays on the server and in the client. A third re-entry, which the client sends after
// both releases (an owner's acquire waits for its releases queued), makes two holds, and the caller's two Unlocks
// free the lock.
func TestTwoLostReentriesThatNeverRanLeaveTheHold(t *testing.T) {
	r := newReentryRig(t, false, rlock.Config{RetryDelay: 300 * time.Millisecond})
	r.px.Stall(faultproxy.Upstream) // nothing reaches the server
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := r.l.Lock(r.held)
			errs <- err
		}()
	}
	for range 2 { // each connection is reset at the response timeout (1 s)
		if err := <-errs; !errors.Is(err, conn.ErrConnLost) {
			t.Fatalf("re-entry = %v, want an unknown outcome matching conn.ErrConnLost", err)
		}
	}
	r.px.DropAll() // with the re-entries still held up in it
	r.px.Restore()
	again, err := r.l.Lock(r.held)
	if err != nil || again != r.held {
		t.Fatalf("re-entry after the lost grants' releases = %v, %v; want the held context", again, err)
	}
	if got := r.serverCount(t); got != "2" {
		t.Fatalf("server count %q after the lost grants' releases and a re-entry, want 2", got)
	}
	if n, err := r.l.HoldCount(r.held); err != nil || n != 2 {
		t.Fatalf("HoldCount = %d, %v; want 2", n, err)
	}
	if err := r.l.Unlock(r.held); err != nil {
		t.Fatalf("first Unlock: %v", err)
	}
	r.unlockFrees(t)
}

// A re-entry by TryLock without a wait never reaches the server (dropped with its connection in the proxy). Such a
// try is never queued, so the client has no queue entry of it to take back: it must release only the grant it may
// have made, conditionally, and leave the caller's one hold on the server.
func TestAmbiguousReentryTryThatNeverRanLeavesTheHold(t *testing.T) {
	r := newReentryRig(t, false, rlock.Config{RetryDelay: 300 * time.Millisecond})
	r.px.Stall(faultproxy.Upstream) // nothing reaches the server
	_, err := r.l.TryLock(r.held, 0, 5*time.Second)
	var ou *rlock.OutcomeUnknownError
	if !errors.As(err, &ou) || !errors.Is(err, conn.ErrConnLost) {
		t.Fatalf("re-entry = %v, want an *OutcomeUnknownError matching conn.ErrConnLost", err)
	}
	r.px.DropAll() // with the try still held up in it
	r.px.Restore()
	again, err := r.l.Lock(r.held) // sent after the lost grant's release (an owner's acquire waits for it)
	if err != nil || again != r.held {
		t.Fatalf("re-entry after the lost grant's release = %v, %v; want the held context", again, err)
	}
	if got := r.serverCount(t); got != "2" {
		t.Fatalf("server count %q after the lost grant's release and a re-entry, want 2", got)
	}
	if err := r.l.Unlock(r.held); err != nil {
		t.Fatalf("first Unlock: %v", err)
	}
	r.unlockFrees(t)
}

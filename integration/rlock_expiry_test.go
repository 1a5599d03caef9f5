package integration

import (
	"context"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// Leases, the watchdog, and what happens when a holder stops renewing.

// Redisson's testExpire: a lease lock lets another owner in when its lease ends, and the stale holder's unlock
// fails. Redisson's test allows lease + 20 ms; the waiter is woken by its timer, which a loaded machine runs late,
// so the bound here is lease + 250 ms (the lateness is logged).
func TestLeaseExpiryLetsAnotherOwnerIn(t *testing.T) {
	srv := startServer(t)
	c1 := newLockClient(t, srv, 0)
	c2 := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	const lease = 300 * time.Millisecond

	held, err := c1.Lock("lock").LockLease(ctx, lease)
	if err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	held2, err := c2.Lock("lock").TryLock(ctx, 3*time.Second, 0)
	if err != nil {
		t.Fatalf("second owner: %v", err)
	}
	waited := time.Since(granted)
	t.Logf("second owner got the lock %v after the lease ended", waited-lease)
	if waited > lease+250*time.Millisecond {
		t.Errorf("second owner got the lock %v after the first, want at most lease + 250 ms = %v", waited,
			lease+250*time.Millisecond)
	}
	if !errors.Is(context.Cause(held), rlock.ErrLeaseExpired) {
		t.Errorf("first holder's cause = %v, want ErrLeaseExpired", context.Cause(held))
	}
	if err := c1.Lock("lock").Unlock(held); !errors.Is(err, rlock.ErrNotHeld) {
		t.Errorf("stale unlock = %v, want ErrNotHeld", err)
	}
	mustUnlock(t, c2.Lock("lock"), held2)
}

// Redisson's testTryLockWait: a try with a 3 s wait against a held lock gives up after 3 s.
func TestTryLockWaitRunsOut(t *testing.T) {
	srv := startServer(t)
	c1 := newLockClient(t, srv, 0)
	c2 := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	held := mustLock(t, c1.Lock("lock"), ctx)

	start := time.Now()
	_, err := c2.Lock("lock").TryLock(ctx, 3*time.Second, 0)
	took := time.Since(start)
	if !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryLock = %v, want ErrNotAcquired", err)
	}
	if took < 3*time.Second-350*time.Millisecond || took > 3*time.Second+350*time.Millisecond {
		t.Errorf("TryLock gave up after %v, want 3 s ± 350 ms", took)
	}
	if st := c2.Stats(); !idle(st) {
		t.Errorf("waiter left state behind: %+v", st)
	}
	mustUnlock(t, c1.Lock("lock"), held)
}

// Redisson's testLockIsNotRenewedAfterInterruptedTryLock / testAutoExpire with shutdown: a client closed while
// holding stops renewing, and the lock ends within the watchdog timeout.
func TestClosedClientFreesLockWithinWatchdog(t *testing.T) {
	srv := startServer(t)
	const watchdog = time.Second
	c1 := newLockClient(t, srv, watchdog)
	c2 := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)

	held := mustLock(t, c1.Lock("lock"), ctx)
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	if !errors.Is(context.Cause(held), rlock.ErrClosed) {
		t.Errorf("held cause after Close = %v, want ErrClosed", context.Cause(held))
	}
	held2, err := c2.Lock("lock").TryLock(ctx, 3*time.Second, 0)
	if err != nil {
		t.Fatalf("lock not freed after Close: %v", err)
	}
	// The key expires within the watchdog timeout; the waiter learns it on its timer, which a loaded machine may
	// run late, hence the slack.
	if d := time.Since(closed); d > watchdog+300*time.Millisecond {
		t.Errorf("lock freed %v after Close, want within the watchdog timeout %v", d, watchdog)
	}
	mustUnlock(t, c2.Lock("lock"), held2)
}

// A process SIGKILLed while holding frees the lock within the watchdog timeout; while it lives, its watchdog keeps
// the lock past that timeout.
func TestKilledProcessFreesLockWithinWatchdog(t *testing.T) {
	srv := redistest.Start(t) // the child process connects to one address
	const watchdog = time.Second
	cmd, owner := startLockChild(t, srv.Addr(), "lock", watchdog)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 15*time.Second)

	// Alive: renewed past 1.5 watchdog timeouts.
	if _, err := c.Lock("lock").TryLock(ctx, 3*watchdog/2, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryLock against a live holder = %v, want ErrNotAcquired", err)
	}
	if m := hgetall(t, srv, "lock"); m[owner] != "1" {
		t.Fatalf("child's lock = %v, want %s held", m, owner)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	held, err := c.Lock("lock").TryLock(ctx, 3*watchdog, 0)
	if err != nil {
		t.Fatalf("lock not freed after SIGKILL: %v", err)
	}
	if d := time.Since(killed); d > watchdog+300*time.Millisecond { // slack: as after Close
		t.Errorf("lock freed %v after SIGKILL, want within the watchdog timeout %v", d, watchdog)
	}
	mustUnlock(t, c.Lock("lock"), held)
}

// Redisson's testLockLongerThanWatchdog: the watchdog keeps a lock for 10 × its timeout.
func TestWatchdogOutlivesTenTimeouts(t *testing.T) {
	srv := startServer(t)
	const watchdog = time.Second // short, yet with slack for a starved -race run on a loaded machine
	var batches, renewed atomic.Int64
	c, err := rlock.NewClient(lockConfig(srv, rlock.Config{
		WatchdogTimeout: watchdog,
		Observer: observerFunc{renewal: func(e rlock.RenewalEvent) {
			batches.Add(1)
			renewed.Add(int64(e.Renewed))
		}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxT(t, 30*time.Second)
	l := c.Lock("lock")
	held := mustLock(t, l, ctx)

	select {
	case <-held.Done():
		t.Fatalf("lock lost while held: %v", context.Cause(held))
	case <-time.After(10 * watchdog):
	}
	if ok, err := l.IsHeldBy(held); err != nil || !ok {
		t.Fatalf("IsHeldBy after 10 watchdog timeouts = %v, %v", ok, err)
	}
	// One renewal per third of the timeout (plus batching delay): about 30 in 10 timeouts.
	if n := renewed.Load(); n < 20 {
		t.Errorf("%d renewals in 10 watchdog timeouts, want about 30", n)
	}
	mustUnlock(t, l, held)
	after := batches.Load()
	select {
	case <-time.After(2 * watchdog):
	case <-ctx.Done():
	}
	// A batch sent before the Unlock may complete after it; a renewal still running would complete about six
	// (one every third of the timeout).
	if n := batches.Load() - after; n > 1 {
		t.Errorf("%d renewal batches ran after Unlock", n)
	}
}

// An acquire cancelled while it waits — also just as the lock is handed to it — leaves no lock and no renewal.
func TestNoRenewalAfterCancelledAcquire(t *testing.T) {
	srv := startServer(t)
	const watchdog = 300 * time.Millisecond
	var renewals atomic.Int64
	c, err := rlock.NewClient(lockConfig(srv, rlock.Config{
		WatchdogTimeout: watchdog,
		Observer:        observerFunc{renewal: func(e rlock.RenewalEvent) { renewals.Add(int64(e.Locks)) }},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxT(t, 20*time.Second)
	l := c.Lock("lock")

	for i := 0; i < 200; i++ {
		held, err := l.LockLease(ctx, time.Minute) // a lease lock: never renewed itself
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(ctx)
		f := l.LockAsync(wctx)
		// Race the cancellation with the hand-off the unlock starts.
		go func() {
			if i%3 != 0 {
				time.Sleep(time.Duration(i%7) * 50 * time.Microsecond)
			}
			cancel()
		}()
		mustUnlock(t, l, held)
		if got, err := f.Get(ctx); err == nil {
			// Granted before the cancellation: ours to release.
			mustUnlock(t, l, got)
		} else if !errors.Is(err, context.Canceled) {
			t.Fatalf("iteration %d: %v", i, err)
		}
		cancel()
	}
	eventually(t, 5*time.Second, "the lock to be free and nothing held", func() bool {
		locked, _ := l.IsLocked(ctx)
		return !locked && idle(c.Stats())
	})
	before := renewals.Load()
	select {
	case <-time.After(2 * watchdog):
	case <-ctx.Done():
	}
	if n := renewals.Load() - before; n != 0 {
		t.Errorf("%d renewals after every acquire ended", n)
	}
}

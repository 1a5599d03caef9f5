package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// The lock core under transport faults: a waiter keeps its place when the pub/sub connection drops, and a holder
// learns that a restarted (empty) server lost its lock.

func TestWaiterSurvivesPubSubReconnect(t *testing.T) {
	srv := redistest.Start(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 20*time.Second)
	java := javaClient{t, srv}
	channel := "redisson_lock__channel:{shared}"
	numsub := func() int64 {
		r, err := srv.Do(ctx, "PUBSUB", "NUMSUB", channel)
		if err != nil || len(r.Array) != 2 {
			return -1
		}
		return r.Array[1].Int
	}

	if ok, _ := java.lock("shared", 30*time.Second); !ok {
		t.Fatal("java could not lock")
	}
	f := c.Lock("shared").LockAsync(ctx)
	eventually(t, 2*time.Second, "the waiter to subscribe", func() bool { return numsub() == 1 })
	if _, err := srv.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the subscription to come back", func() bool { return numsub() == 1 })
	if f.IsDone() {
		t.Fatal("acquired while java holds")
	}
	released := time.Now()
	java.unlock("shared")
	held, err := f.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(released); d > time.Second {
		t.Fatalf("woken %v after the unlock: the resubscribed channel did not deliver it", d)
	}
	mustUnlock(t, c.Lock("shared"), held)
}

func TestHolderLearnsThatARestartedServerLostTheLock(t *testing.T) {
	srv := redistest.Start(t)
	c := newLockClient(t, srv, 600*time.Millisecond)
	ctx := ctxT(t, 20*time.Second)
	held := mustLock(t, c.Lock("lock"), ctx)

	if err := srv.Restart(); err != nil { // no persistence: the lock is gone
		t.Fatal(err)
	}
	select {
	case <-held.Done():
	case <-ctx.Done():
		t.Fatal("the held context was not cancelled after the server lost the lock")
	}
	if cause := context.Cause(held); !errors.Is(cause, rlock.ErrLockLost) && !errors.Is(cause, rlock.ErrLeaseExpired) {
		t.Fatalf("cause = %v, want ErrLockLost or ErrLeaseExpired", cause)
	}
	if st := c.Stats(); st.Held != 0 {
		t.Fatalf("the lost lock is still recorded: %+v", st)
	}
	// The client works on: the lock can be taken again.
	held2 := mustLock(t, c.Lock("lock"), ctx)
	mustUnlock(t, c.Lock("lock"), held2)
}

// A server that stops answering (SIGSTOP) cannot confirm renewals: the held context is cancelled with
// ErrLeaseExpired when the lease ends, although the transport is still waiting for its response timeout (3 s,
// longer than the 1 s lease).
func TestUnreachableServerExpiresTheLeaseOnTime(t *testing.T) {
	srv := redistest.Start(t)
	const watchdog = time.Second
	c := newLockClient(t, srv, watchdog)
	ctx := ctxT(t, 20*time.Second)
	held := mustLock(t, c.Lock("lock"), ctx)

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	defer srv.Resume()
	// The last confirmed renewal was sent before the pause, so the lease ends less than a watchdog timeout after
	// it: by then Err, which reads the clock itself, reports the end whatever the timer's delay.
	time.Sleep(time.Until(paused.Add(watchdog)))
	if held.Err() == nil {
		t.Errorf("the held context reports the lock held %v after the server stopped answering, past the %v lease",
			time.Since(paused), watchdog)
	}
	// Done follows on the timer, which a loaded machine may run a little late.
	select {
	case <-held.Done():
	case <-ctx.Done():
		t.Fatal("the held context outlived its lease")
	}
	if d := time.Since(paused); d > watchdog+300*time.Millisecond {
		t.Errorf("held context cancelled %v after the server stopped answering, want within the %v lease and "+
			"a timer's delay", d, watchdog)
	}
	if !errors.Is(context.Cause(held), rlock.ErrLeaseExpired) {
		t.Fatalf("cause = %v, want ErrLeaseExpired", context.Cause(held))
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
}

// Against a server that stops answering (SIGSTOP), UnlockAsync(held).Get(ctx) returns ctx's error when ctx ends,
// while the release is still pending, instead of waiting for the transport's retries (up to 12.6 s with the
// defaults); the release goes on, and completes once the server answers again (SIGCONT): nothing of the hold is
// left on the server.
func TestUnlockAsyncGetIsBoundedByItsContextAgainstAFrozenServer(t *testing.T) {
	srv := redistest.Start(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 30*time.Second)
	l := c.Lock("frozen")
	held := mustLock(t, l, ctx)

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	defer srv.Resume() // a no-op once resumed below; it keeps the server alive for Close after a failure
	f := l.UnlockAsync(held)
	wait, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := f.Get(wait); !errors.Is(err, context.DeadlineExceeded) || wait.Err() == nil {
		t.Fatalf("Get against a frozen server = %v; want the context's deadline, once it passed", err)
	}
	select {
	case <-f.Done():
		t.Fatalf("the release completed while the server was frozen")
	default:
	}

	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get(ctx); err != nil {
		t.Fatalf("the release after the server resumed: %v", err)
	}
	if !errors.Is(context.Cause(held), rlock.ErrReleased) {
		t.Fatalf("held's cause = %v; want ErrReleased", context.Cause(held))
	}
	if n, err := srv.DoInt(ctx, "EXISTS", "frozen"); err != nil || n != 0 {
		t.Fatalf("EXISTS frozen = %d, %v: the hold is still on the server", n, err)
	}
	if st := c.Stats(); st.Held != 0 {
		t.Fatalf("the client still records a hold: %+v", st)
	}
}

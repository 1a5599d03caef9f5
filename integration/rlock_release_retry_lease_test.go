package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/faultproxy"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// A release whose reply is lost is retried; the retry only reports what the first attempt did on the server (the
// count no longer matches; the next waiter already holds the lock). What the first attempt armed there — the
// re-armed lease of a partial release, the lease of the waiter it granted — counts from when that attempt was sent,
// so the held context it leaves must end no later than the server's lease, not a response timeout and a retry delay
// after it.

// releaseRetryRig is a client behind a proxy whose replies time out after 500 ms and are retried 100 ms later.
type releaseRetryRig struct {
	srv *redistest.Server
	px  *faultproxy.Proxy
	c   *rlock.Client
	l   *rlock.Lock
	ctx context.Context
}

func newReleaseRetryRig(t *testing.T) *releaseRetryRig {
	t.Helper()
	r := &releaseRetryRig{srv: redistest.Start(t), ctx: ctxT(t, 30*time.Second)}
	r.px = faultproxy.Start(t, r.srv.Addr())
	c, err := rlock.NewClient(rlock.Config{RetryDelay: 100 * time.Millisecond,
		Conn: conn.Config{Addr: r.px.Addr(), ResponseTimeout: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	warmScripts(t, c, r.ctx)
	r.c, r.l = c, c.Lock("rr")
	return r
}

// unlockUnanswered unlocks held while the proxy withholds the replies, until the server shows that the release
// ran (ran) and the proxy took its reply out of the way, and returns the Unlock's error once its retry was
// answered.
func (r *releaseRetryRig) unlockUnanswered(t *testing.T, held context.Context, ran func() bool) error {
	t.Helper()
	r.px.Withhold(faultproxy.Downstream)
	done := make(chan error, 1)
	go func() { done <- r.l.Unlock(held) }()
	eventually(t, 5*time.Second, "the release to run on the server and its reply to be withheld", func() bool {
		return ran() && r.px.Withheld(faultproxy.Downstream) > 0
	})
	r.px.Release(faultproxy.Downstream) // the retry's connection is answered
	select {
	case err := <-done:
		return err
	case <-r.ctx.Done():
		t.Fatal("the Unlock never returned")
		return nil
	}
}

// endsWithTheServer waits until the server no longer holds the lock for owner and checks that held ended by then.
func (r *releaseRetryRig) endsWithTheServer(t *testing.T, held context.Context, owner string) {
	t.Helper()
	eventually(t, 10*time.Second, "the lease to end on the server", func() bool {
		return hgetall(t, r.srv, "rr")[owner] == ""
	})
	if held.Err() == nil {
		t.Fatalf("the held context is live after the server's lease ended (the lease counted from the retry)")
	}
}

func TestPartialReleaseRetriedCountsTheLeaseFromTheAttemptThatRan(t *testing.T) {
	r := newReleaseRetryRig(t)
	held, err := r.l.TryLock(r.ctx, 0, 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.l.TryLock(held, 0, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	owner := mustOwner(t, held)
	err = r.unlockUnanswered(t, held, func() bool { return hgetall(t, r.srv, "rr")[owner] == "1" })
	if err != nil {
		t.Fatalf("Unlock = %v, want nil (its retry found the count the first attempt left)", err)
	}
	if n, err := r.l.HoldCount(held); n != 1 || err != nil {
		t.Fatalf("HoldCount = %d, %v; want 1", n, err)
	}
	r.endsWithTheServer(t, held, owner)
}

func TestReleaseRetriedCountsTheNextWaitersLeaseFromTheAttemptThatRan(t *testing.T) {
	r := newReleaseRetryRig(t)
	held, err := r.l.Lock(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		held context.Context
		err  error
	}
	waited := make(chan result, 1)
	// A first waiter that gives up leaves the queue subscribed (it lingers): the next waiter is idle as soon as
	// its first attempt is refused, rather than attempting again when the subscription is confirmed. The release
	// then names it as its next waiter.
	if _, err := r.l.TryLock(r.ctx, 20*time.Millisecond, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("a waiter's TryLock = %v, want ErrNotAcquired", err)
	}
	go func() {
		// A 6 s lease: the waiter refreshes its queue entry every 2 s, not while the release is in flight.
		h, err := r.l.TryLock(r.ctx, 10*time.Second, 6*time.Second)
		waited <- result{h, err}
	}()
	eventually(t, 5*time.Second, "the waiter to be queued, and told so", func() bool {
		n, err := r.srv.DoInt(r.ctx, "LLEN", "locksmith_lock_queue:{rr}")
		return err == nil && n == 1 && r.c.Stats().Waiters == 1
	})
	holder := mustOwner(t, held)
	err = r.unlockUnanswered(t, held, func() bool {
		got := hgetall(t, r.srv, "rr")
		return len(got) == 1 && got[holder] == ""
	})
	if err != nil {
		t.Fatalf("Unlock = %v, want nil", err)
	}
	w := <-waited
	if w.err != nil {
		t.Fatalf("the waiter's TryLock = %v, want the lock", w.err)
	}
	r.endsWithTheServer(t, w.held, mustOwner(t, w.held))
}

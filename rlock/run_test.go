package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// A client's run of grants to its own waiters ends when the lock leaves the client: the bound on a run (one
// second, then the lock is left free for clients that do not queue) counts from the first grant of the client's
// current run, not of its first run ever, which would cut short, about once a second, the run of a client that
// has just received the lock from another process.
func TestAClientsRunEndsWhenTheLockLeavesIt(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, b := relayClient(t, srv, nil), relayClient(t, srv, nil)
	queued := func(n int64) {
		t.Helper()
		waitFor(t, func() bool {
			got, err := srv.DoInt(ctx, "LLEN", "locksmith_lock_queue:{run}")
			return err == nil && got == n
		})
	}
	held, err := a.Lock("run").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lockIn := func(c *Client, who string) chan context.Context {
		ch := make(chan context.Context, 1)
		go func() { // owner: this test; ends when Lock returns (ctx bounds it)
			h, err := c.Lock("run").Lock(ctx)
			if err != nil {
				t.Errorf("%s's waiter: %v", who, err)
				h = nil
			}
			ch <- h
		}()
		return ch
	}
	bGot := lockIn(b, "b")
	queued(1)
	aGot := lockIn(a, "a")
	queued(2) // a's second waiter is queued behind b's
	// Its client retries once its subscriptions are confirmed (a release may have come between its refusal and
	// them); a release during that attempt would not name it, and the lock would go to b first.
	waitFor(t, func() bool { return settled(a, "run") })
	// a's release grants its own waiter first (a run of local grants), ahead of b's.
	if err := a.Lock("run").Unlock(held); err != nil {
		t.Fatal(err)
	}
	held2 := <-aGot
	if held2 == nil {
		return
	}
	q := func() *queue {
		sh := a.shard("run")
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return sh.lockQueues["run"]
	}()
	runStart := func() time.Duration {
		sh := a.shard("run")
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return q.runStart
	}
	if q == nil || runStart() == 0 {
		t.Fatal("a's local grant did not start a run")
	}
	// a's last release hands the lock to b: a's run is over.
	if err := a.Lock("run").Unlock(held2); err != nil {
		t.Fatal(err)
	}
	if h := <-bGot; h == nil {
		return
	} else if err := b.Lock("run").Unlock(h); err != nil {
		t.Fatal(err)
	}
	if s := runStart(); s != 0 {
		t.Fatalf("a's run still counts from %v after the lock went to b", s)
	}
}

// settled reports whether c's first waiter on the lock name is queued on the server and waiting, with the lock's
// subscriptions confirmed.
func settled(c *Client, name string) bool {
	sh := c.shard(name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	q := sh.lockQueues[name]
	return q != nil && q.subscribed && q.head != nil && q.head.state == wIdle && q.head.queued
}

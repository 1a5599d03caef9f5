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

// A waiter whose context ends while its attempt is in flight — an attempt the server runs and that queues it —
// and whose Client is closed right after (a process that gives up on a signal and exits) leaves no entry in the
// lock's queue: Close waits for that attempt's reply and takes the entry out. Before, the entry stayed for the
// queue's liveness window, and the next release granted the lock to the departed waiter.
func TestCloseRightAfterAnAbandonedAttemptLeavesNoQueueEntry(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxT(t, 20*time.Second)
	holder := newLockClient(t, srv, 0)
	held := mustLock(t, holder.Lock("gone"), ctx)
	px := faultproxy.Start(t, srv.Addr())
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: px.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	px.SetLatency(faultproxy.Downstream, 300*time.Millisecond) // the server runs each command; its reply comes late
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { // owner: this test; returns when Lock does
		_, err := c.Lock("gone").Lock(lctx)
		done <- err
	}()
	const queueKey = "locksmith_lock_queue:{gone}"
	eventually(t, 5*time.Second, "the waiter's attempt queued it on the server", func() bool {
		n, _ := srv.DoInt(ctx, "LLEN", queueKey)
		return n == 1
	})
	cancel() // its reply is still on the way
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock = %v, want context.Canceled", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n, _ := srv.DoInt(ctx, "LLEN", queueKey); n != 0 {
		t.Fatalf("the departed waiter left %d entries in the queue", n)
	}
	mustUnlock(t, holder.Lock("gone"), held)
	if n, _ := srv.DoInt(ctx, "EXISTS", "gone"); n != 0 {
		t.Fatal("the release granted the lock to the departed waiter")
	}
}

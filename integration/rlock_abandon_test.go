package integration

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/future"
)

// An async acquire is abandoned by cancelling its own context; Get's context bounds only the wait for the future.
// 1,000 acquires queued behind a holder are given up on after a short Get, abandoned that way while the holder
// unlocks (so that some are granted before their cancellation, some while it is in flight), and a grant that came
// first is given back from OnComplete, as the package documentation shows. Afterwards nobody holds the lock: not
// the server, not the client's bookkeeping.
func TestThousandAbandonedAsyncAcquiresLeaveNoHold(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 60*time.Second)
	l := c.Lock("abandon")
	holder := mustLock(t, l, ctx)

	const n = 1000
	futs := make([]*future.Future[context.Context], n)
	abandon := make([]context.CancelFunc, n)
	for i := range n {
		var acq context.Context
		acq, abandon[i] = context.WithCancel(ctx)
		futs[i] = l.LockAsync(acq)
	}
	wait, stop := context.WithTimeout(ctx, 20*time.Millisecond)
	defer stop()
	for i, f := range futs {
		if _, err := f.Get(wait); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("acquire %d: Get = %v, want the wait's deadline (the holder holds the lock)", i, err)
		}
	}
	// Get's context does not end the acquire: every call goes on to wait (a call counts as a waiter once its
	// first attempt was refused, which a loaded machine may not have answered yet).
	eventually(t, 10*time.Second, "every acquire waiting after the Gets gave up", func() bool {
		return c.Stats().Waiters == n
	})

	var givenBack, abandoned atomic.Int64
	unlocked := make(chan error, 1)
	for i, f := range futs {
		if i == n/2 {
			go func() { unlocked <- l.Unlock(holder) }() // owner: this test; returns with the Unlock
		}
		abandon[i]()
		f.OnComplete(func(held context.Context, err error) {
			switch {
			case err == nil: // granted before its context was cancelled: the caller's to give back
				givenBack.Add(1)
				l.UnlockAsync(held)
			case errors.Is(err, context.Canceled):
				abandoned.Add(1)
			default:
				t.Errorf("abandoned acquire: %v", err)
			}
		})
	}
	if err := <-unlocked; err != nil {
		t.Fatal(err)
	}
	// A waiter leaves the client's queue (Stats) when its departure is sent, and its future fails once the server
	// answered the departure: every future must complete, not only the counts fall to zero.
	eventually(t, 10*time.Second, "every future complete and no hold left, on the server and in the client", func() bool {
		held, _ := srv.DoInt(context.Background(), "EXISTS", "abandon")
		s := c.Stats()
		return held == 0 && s.Held == 0 && s.Waiters == 0 && givenBack.Load()+abandoned.Load() == n
	})
	t.Logf("%d acquires failed with context.Canceled, %d were granted first and given back", abandoned.Load(),
		givenBack.Load())
	// The lock is free for anyone.
	if _, err := l.TryLock(ctx, 0, 0); err != nil {
		t.Fatalf("TryLock after the abandoned acquires: %v", err)
	}
}

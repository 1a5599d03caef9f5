package rlock

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// watchCount is the number of context watches the client's shards hold.
func watchCount(c *Client) int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		w, _ := sh.watches.Counts()
		n += w
		sh.mu.Unlock()
	}
	return n
}

// Calls that share one context are watched together, and a watch goes when its last call ends: after many
// uncontended calls with a shared cancellable context, nothing is watched any more.
func TestSharedContextWatchEndsWithItsCalls(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := c.Lock("watch-" + strconv.Itoa(g))
			for range 50 {
				held, err := l.Lock(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if err := l.Unlock(held); err != nil {
					t.Error(err)
					return
				}
				held, err = l.LockAsync(ctx).Get(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := l.UnlockAsync(held).Get(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := watchCount(c); n != 0 {
		t.Errorf("%d context watches left after every call ended", n)
	}
}

// When a context that many waiting calls share ends, every one of them returns its error (blocking calls) or fails
// with it (async calls), leaves its queue, and the watches and subscriptions go; the lock's holder is unaffected.
func TestSharedContextEndAbandonsEveryWaiter(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	l := c.Lock("watch-held")
	held, err := l.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("shutting down")
	const blocking, async = 20, 20
	errs := make(chan error, blocking+async)
	for range blocking {
		go func() {
			_, err := l.Lock(ctx)
			errs <- err
		}()
	}
	for range async {
		l.LockAsync(ctx).OnComplete(func(_ context.Context, err error) { errs <- err })
	}
	waitForSubscribers(t, srv, channelName("watch-held"))
	waitFor(t, func() bool { return c.Stats().Waiters == blocking+async })
	cancel(stop)
	for range blocking + async {
		select {
		case err := <-errs:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("a waiter returned %v, want context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("waiters still blocked 10 s after their context ended")
		}
	}
	if n := watchCount(c); n != 0 {
		t.Errorf("%d context watches left after the context ended", n)
	}
	// A waiter whose attempt was in flight failed at once and leaves its queue when the reply comes.
	waitFor(t, func() bool { return c.Stats().Waiters == 0 })
	if held.Err() != nil {
		t.Errorf("the holder's context ended: %v", context.Cause(held))
	}
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits until cond holds, bounded: for state that other goroutines reach without telling the test (the
// waiters queueing inside the client).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

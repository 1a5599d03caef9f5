package rlock

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// Recycling of blocking calls' structs (recycle.go): which are reused, which are left to the garbage collector,
// and that reuse never meets a party still holding the struct (the race detector watches the stress test).

// recycleCounter counts the structs a client recycles and checks each against the rule that let it go.
type recycleCounter struct {
	calls, unlock atomic.Int64
	changed       chan struct{} // signalled after each recycle
}

// await waits until the counters reach calls and unlock: a struct is recycled by whichever party lets go of it
// last, which may be the completing event loop just after the caller returned.
func (rc *recycleCounter) await(t *testing.T, calls, unlock int64) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for rc.calls.Load() < calls || rc.unlock.Load() < unlock {
		select {
		case <-rc.changed:
		case <-timeout:
			t.Fatalf("recycled %d lock calls and %d unlock ops, want %d and %d", rc.calls.Load(), rc.unlock.Load(),
				calls, unlock)
		}
	}
}

func countRecycling(t *testing.T, c *Client) *recycleCounter {
	rc := &recycleCounter{changed: make(chan struct{}, 1)}
	c.recycled = func(s any) {
		defer func() {
			select {
			case rc.changed <- struct{}{}:
			default:
			}
		}()
		switch s := s.(type) {
		case *syncLockCall:
			if !s.recyclable || s.q != nil || s.tm != nil || s.state != wDone {
				t.Errorf("recycled a lock call that was not clean: recyclable %v, queued %v, timer %v, state %v",
					s.recyclable, s.q != nil, s.tm != nil, s.state)
			}
			rc.calls.Add(1)
		case *syncUnlockOp:
			if s.observed {
				t.Error("recycled an unlock op that an acquire of the same owner waits on")
			}
			if !s.p.Future().IsDone() {
				t.Error("recycled an unlock op whose future is pending")
			}
			rc.unlock.Add(1)
		default:
			t.Errorf("recycled a %T", s)
		}
	}
	return rc
}

// Every uncontended blocking Lock and Unlock gives its struct back; async calls, whose futures belong to the
// caller, never do.
func TestBlockingCallsAreRecycled(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	rc := countRecycling(t, c)
	ctx := context.Background()
	l := c.Lock("recycle")
	const n = 200
	lockUnlock(t, ctx, l, n)
	rc.await(t, n, n)

	for range n {
		held, err := l.LockAsync(ctx).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.UnlockAsync(held).Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Recycling is decided before each call returns (the async call's structs are never marked), so nothing can
	// come late here.
	if c, u := rc.calls.Load(), rc.unlock.Load(); c != n || u != n {
		t.Errorf("async calls were recycled: %d lock calls, %d unlock ops after %d async pairs", c-n, u-n, n)
	}
}

// A blocking call that waited (queued behind a holder), or had a deadline on the timer, is not recycled: others
// referenced it. Its Unlock is.
func TestCallsThatWaitedAreNotRecycled(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	rc := countRecycling(t, c)
	ctx := context.Background()
	l := c.Lock("recycle-wait")

	held, err := l.TryLock(ctx, time.Second, 0) // a deadline: the call armed a timer
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { // waits for the holder: queued and subscribed
		h2, err := l.Lock(WithOwner(ctx, "2"))
		if err == nil {
			err = l.Unlock(h2)
		}
		got <- err
	}()
	waitForSubscribers(t, srv, channelName("recycle-wait"))
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	rc.await(t, 0, 2)
	if n := rc.calls.Load(); n != 0 {
		t.Errorf("recycled %d lock calls; the one with a deadline and the one that queued must not be", n)
	}
}

// Goroutines contend for three locks with short contexts and waits, so calls are abandoned in flight, queued,
// handed off and timed out while others are recycled. Mutual exclusion holds throughout, every hold is released,
// and the race detector sees no reuse of a struct somebody still holds.
func TestRecyclingUnderContention(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	rc := countRecycling(t, c)
	const names = 3
	var inside [names]atomic.Int32 // goroutines holding each lock
	var wg sync.WaitGroup
	iters := 300
	if testing.Short() {
		iters = 100
	}
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range iters {
				i := r.IntN(names)
				l := c.Lock("recycle-" + strconv.Itoa(i))
				held, err := acquireBriefly(r, l, context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if held == nil {
					continue
				}
				if n := inside[i].Add(1); n != 1 {
					t.Errorf("lock %d: %d holders at once", i, n)
				}
				inside[i].Add(-1)
				if err := l.Unlock(held); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("recycled %d lock calls and %d unlock ops", rc.calls.Load(), rc.unlock.Load())
	if rc.calls.Load() == 0 || rc.unlock.Load() == 0 {
		t.Error("nothing was recycled")
	}
}

// An acquire of the same owner that starts while the owner's last release is in flight waits on that release's
// future (lockCall.start): that unlock op must outlive the release and is never recycled. Two goroutines share an
// owner: one releases while the other acquires, each round; whichever order the server sees, both succeed and the
// lock ends free.
func TestAcquireDuringItsOwnersReleaseKeepsTheOp(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	rc := countRecycling(t, c)
	owner := WithOwner(context.Background(), "5")
	l := c.Lock("recycle-owner")
	const rounds = 300
	for range rounds {
		held, err := l.Lock(owner)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var again context.Context
		var errUnlock, errLock error
		wg.Add(2)
		go func() { defer wg.Done(); errUnlock = l.Unlock(held) }()
		go func() { defer wg.Done(); again, errLock = l.Lock(owner) }()
		wg.Wait()
		if errUnlock != nil || errLock != nil {
			t.Fatalf("unlock: %v, lock: %v", errUnlock, errLock)
		}
		if err := l.Unlock(again); err != nil {
			t.Fatal(err)
		}
		if locked, err := l.IsLocked(context.Background()); err != nil || locked {
			t.Fatalf("still locked (%v) after both holds were released", err)
		}
	}
	t.Logf("recycled %d of %d unlock ops", rc.unlock.Load(), 2*rounds)
}

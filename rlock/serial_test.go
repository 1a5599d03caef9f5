package rlock

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// Goroutines that share an owner re-enter and release the same locks at once, some with contexts and waits short
// enough to be abandoned in flight: the client sends the owner's count-changing commands of a hold one after
// another (serial.go), so every Unlock of a hold a goroutine acquired succeeds, owners exclude each other, and
// every lock ends free. (Without the serialization, a release raced a re-entry of its owner and failed with
// ErrNotHeld, "the hold count keeps changing", leaving the lock held.)
func TestSharedOwnerReentriesAndReleasesInterleave(t *testing.T) {
	srv := redistest.Start(t)
	c := relayClient(t, srv, nil)
	const names = 3
	var mu sync.Mutex
	var holder [names]string // the owner holding each lock, as the goroutines see it
	var inside [names]int    // goroutines of that owner inside
	enter := func(i int, owner string) {
		mu.Lock()
		defer mu.Unlock()
		if inside[i] > 0 && holder[i] != owner {
			t.Errorf("lock %d: owner %s acquired it while owner %s held it", i, owner, holder[i])
		}
		holder[i] = owner
		inside[i]++
	}
	leave := func(i int) {
		mu.Lock()
		inside[i]--
		mu.Unlock()
	}
	iters := 300
	if testing.Short() {
		iters = 100
	}
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 11))
			owner := strconv.Itoa(1 + g%4) // three goroutines per owner
			for range iters {
				i := r.IntN(names)
				l := c.Lock("serial-" + strconv.Itoa(i))
				held, err := acquireBriefly(r, l, WithOwner(context.Background(), owner))
				if err != nil {
					t.Error(err)
					return
				}
				if held == nil {
					continue
				}
				enter(i, owner)
				if n, err := l.HoldCount(held); err != nil || n < 1 {
					t.Errorf("hold count %d (%v) while holding", n, err)
				}
				leave(i)
				if err := l.Unlock(held); err != nil {
					t.Errorf("owner %s: Unlock: %v", owner, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// A grant that arrived after its acquire was abandoned is given back by the client, asynchronously.
	for i := range names {
		l := c.Lock("serial-" + strconv.Itoa(i))
		waitFor(t, func() bool { locked, err := l.IsLocked(context.Background()); return err == nil && !locked })
	}
	waitFor(t, func() bool { return c.Stats().Held == 0 })
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		if len(sh.serial) != 0 {
			t.Errorf("shard %d keeps %d holds' serialization state", i, len(sh.serial))
		}
		sh.mu.Unlock()
	}
}

// acquireBriefly acquires l with parent's owner, within a context of up to 3 ms: by Lock, or by TryLock with a wait
// of up to 2 ms, at random. It returns a nil context and error when the context or the wait ran out first, and any
// other error as it is.
func acquireBriefly(r *rand.Rand, l *Lock, parent context.Context) (context.Context, error) {
	ctx, cancel := context.WithTimeout(parent, time.Duration(r.IntN(3000))*time.Microsecond)
	defer cancel()
	var held context.Context
	var err error
	if r.IntN(2) == 0 {
		held, err = l.Lock(ctx)
	} else {
		held, err = l.TryLock(ctx, time.Duration(r.IntN(2000))*time.Microsecond, 0)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNotAcquired) {
		return nil, nil
	}
	return held, err
}

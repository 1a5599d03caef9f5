package future_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/locksmith-go/locksmith/future"
)

// TestStressCompletersWaitersAndCancellations races every operation against
// every other on the same future, round after round, so that -race and the
// pool's invariant check (a waiter returned with a pending token panics) see the
// interleavings: completion against parking, cancellation against completion,
// registration against notification. Every observer must see the winner's
// result, every callback must run exactly once, and every cancelled Get must
// report its context's error or the winner's result.
func TestStressCompletersWaitersAndCancellations(t *testing.T) {
	rounds := 400
	if testing.Short() {
		rounds = 50
	}
	const completers, getters, cancellers, doners, callbacks = 3, 3, 3, 2, 3
	for round := range rounds {
		p := future.NewPromise[int]()
		f := p.Future()
		start := make(chan struct{})
		var (
			wg       sync.WaitGroup
			winner   atomic.Int64
			wins     atomic.Int32
			cbRuns   atomic.Int32
			observed = make(chan int, getters+cancellers+doners+callbacks)
		)
		winner.Store(-1)
		spawn := func(fn func()) {
			wg.Add(1)
			go func() { // owned by this round; waited for by wg
				defer wg.Done()
				<-start
				fn()
			}()
		}
		for c := range completers {
			spawn(func() {
				v := round*100 + c
				if p.Succeed(v) {
					wins.Add(1)
					winner.Store(int64(v))
				}
			})
		}
		for range getters {
			spawn(func() {
				v, err := f.Get(context.Background())
				if err != nil {
					t.Errorf("Get: %v", err)
				}
				observed <- v
			})
		}
		for range cancellers {
			ctx, cancel := context.WithCancel(context.Background())
			spawn(cancel) // races the Get below
			spawn(func() {
				v, err := f.Get(ctx)
				switch {
				case err == nil:
					observed <- v
				case errors.Is(err, context.Canceled):
					observed <- -1
				default:
					t.Errorf("cancellable Get: %v", err)
				}
			})
		}
		for range doners {
			spawn(func() {
				<-f.Done()
				v, _, ok := f.Peek()
				if !ok {
					t.Error("Done closed before the result was visible")
				}
				observed <- v
			})
		}
		for range callbacks {
			spawn(func() {
				f.OnComplete(func(v int, _ error) {
					cbRuns.Add(1)
					observed <- v
				})
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d winners", round, wins.Load())
		}
		if n := cbRuns.Load(); n != callbacks {
			t.Fatalf("round %d: callbacks ran %d times, want %d", round, n, callbacks)
		}
		close(observed)
		w := int(winner.Load())
		for v := range observed {
			if v != w && v != -1 {
				t.Fatalf("round %d: observed %d, winner %d", round, v, w)
			}
		}
		if future.ParkedGets(f) != 0 {
			t.Fatalf("round %d: waiters left parked", round)
		}
	}
}

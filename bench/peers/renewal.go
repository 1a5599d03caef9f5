package main

import (
	"context"
	"errors"
	"sync"
	"time"
)

// renewal is the watchdog redsync's and bsm/redislock's users write
// themselves: one goroutine per held lock, extending it every interval with
// a ticker, giving up (lock lost) when an extension fails.
type renewal struct {
	stop chan struct{}
	done chan struct{}
	lost chan struct{} // closed when an extension failed
}

// errNotExtended is reported when an extension found the lock gone.
var errNotExtended = errors.New("peers: the lock could not be extended")

// startRenewal starts the goroutine; extend must return an error when the
// lock could not be extended.
func startRenewal(interval time.Duration, extend func(ctx context.Context) error) *renewal {
	r := &renewal{stop: make(chan struct{}), done: make(chan struct{}), lost: make(chan struct{})}
	// Owned by the held lock: ends when end is called (before the unlock) or
	// when an extension fails; waited for in end.
	go func() {
		defer close(r.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), interval)
				err := extend(ctx)
				cancel()
				if err != nil {
					close(r.lost)
					return
				}
			}
		}
	}()
	return r
}

// isLost reports whether an extension failed.
func (r *renewal) isLost() bool {
	select {
	case <-r.lost:
		return true
	default:
		return false
	}
}

// end stops the goroutine and waits for it.
func (r *renewal) end() {
	r.stopOnce()
	<-r.done
}

func (r *renewal) stopOnce() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
}

// countConcurrently calls check for every index with 64 goroutines and
// returns how many returned true; the first error is returned.
func countConcurrently(ctx context.Context, n int, check func(ctx context.Context, i int) (bool, error)) (int, error) {
	var (
		mu       sync.Mutex
		next     int
		owned    int
		firstErr error
		wg       sync.WaitGroup
	)
	for w := 0; w < 64; w++ {
		wg.Add(1)
		// Owned by countConcurrently: ends when every index was checked;
		// waited for below.
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n || ctx.Err() != nil {
					return
				}
				ok, err := check(ctx, i)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if ok {
					owned++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return owned, firstErr
}

package workload

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// memLib is an in-process lock library for testing the workloads without a
// server: a FIFO of waiters per name. broken turns mutual exclusion off.
type memLib struct {
	broken bool
	cmds   atomic.Uint64

	mu      sync.Mutex // guards the maps
	held    map[string]bool
	waiters map[string][]chan struct{}
	lost    map[string]bool // W3: names whose loss the fake reports and the "server" shows
	hang    map[string]bool // W3: names whose LockWatched blocks until unhang is closed
	unhang  chan struct{}
}

func newMemLib() *memLib {
	return &memLib{held: map[string]bool{}, waiters: map[string][]chan struct{}{}, lost: map[string]bool{},
		hang: map[string]bool{}, unhang: make(chan struct{})}
}

type memHeld struct {
	l    *memLib
	name string
	lost chan struct{}
}

func (l *memLib) Commands() (uint64, bool) { return l.cmds.Load(), true }

func (l *memLib) Lock(ctx context.Context, name string) (Held, error) {
	for {
		l.cmds.Add(1)
		l.mu.Lock()
		if l.broken || !l.held[name] {
			l.held[name] = true
			l.mu.Unlock()
			if l.broken {
				runtime.Gosched() // let another "holder" in
			}
			return &memHeld{l: l, name: name, lost: make(chan struct{})}, nil
		}
		ch := make(chan struct{})
		l.waiters[name] = append(l.waiters[name], ch)
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			l.mu.Lock()
			ws := l.waiters[name]
			for i, w := range ws {
				if w == ch {
					l.waiters[name] = append(ws[:i:i], ws[i+1:]...)
					break
				}
			}
			l.mu.Unlock()
			select {
			case <-ch: // woken meanwhile: pass the wake-up on
				l.wake(name)
			default:
			}
			return nil, ctx.Err()
		}
	}
}

// wake lets the first waiter of name retry.
func (l *memLib) wake(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ws := l.waiters[name]; len(ws) > 0 {
		close(ws[0])
		l.waiters[name] = ws[1:]
	}
}

func (h *memHeld) Unlock(context.Context) error {
	h.l.cmds.Add(1)
	h.l.mu.Lock()
	h.l.held[h.name] = false
	h.l.mu.Unlock()
	h.l.wake(h.name)
	return nil
}

func (h *memHeld) Lost() bool {
	select {
	case <-h.lost:
		return true
	default:
		return false
	}
}

func (l *memLib) Close() error { return nil }

// W3: LockWatched takes the lock; names listed in lost are reported lost;
// names listed in hang never return until unhang is closed.
func (l *memLib) LockWatched(ctx context.Context, name string) (WatchedHeld, error) {
	l.mu.Lock()
	hang := l.hang[name]
	l.mu.Unlock()
	if hang {
		<-l.unhang
		return nil, context.Canceled
	}
	h, err := l.Lock(ctx, name)
	if err != nil {
		return nil, err
	}
	mh := h.(*memHeld)
	l.mu.Lock()
	if l.lost[name] {
		close(mh.lost)
	}
	l.mu.Unlock()
	return mh, nil
}

func (l *memLib) RenewPlan() (time.Duration, int) { return time.Second, 100 }

func (l *memLib) CountOwned(_ context.Context, held []WatchedHeld) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, h := range held {
		if !l.lost[h.(*memHeld).name] {
			n++
		}
	}
	return n, nil
}

// W5: the async calls run the blocking ones in a goroutine each (fine for a
// fake; the real library completes futures on its event loop).
type memAsync struct {
	*memLib
	wg sync.WaitGroup
}

func (a *memAsync) LockAsync(ctx context.Context, name string, done func(Held, error)) {
	a.wg.Add(1)
	// Owned by the test's library: waited for in Close.
	go func() {
		defer a.wg.Done()
		done(a.Lock(ctx, name))
	}()
}

func (a *memAsync) UnlockAsync(ctx context.Context, h Held, done func(error)) {
	a.wg.Add(1)
	// Owned by the test's library: waited for in Close.
	go func() {
		defer a.wg.Done()
		done(h.Unlock(ctx))
	}()
}

func (a *memAsync) Close() error {
	a.wg.Wait()
	return nil
}

// stuckLib never returns from Lock until release is closed, whatever ctx
// says: rueidislock's failure mode, a Lock that blocks forever on a free key.
type stuckLib struct {
	release chan struct{}
}

func (s *stuckLib) Lock(context.Context, string) (Held, error) {
	<-s.release
	return nil, context.Canceled
}

func (s *stuckLib) Close() error { return nil }

// countingWindow records the handshake calls.
type countingWindow struct{ begins, ends atomic.Int32 }

func (w *countingWindow) Begin() error { w.begins.Add(1); return nil }
func (w *countingWindow) End() error   { w.ends.Add(1); return nil }

// keyWithDefaults is the key name Run will use for lock i of s.
func (s Spec) keyWithDefaults(i int) string {
	s.defaults()
	return s.key(i)
}

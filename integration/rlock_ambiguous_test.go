package integration

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/faultproxy"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// Ambiguous outcomes: an acquire whose command was written but whose reply never came (the server slept through
// the client's response timeout, or the replies were held up) may have been granted. The caller is told that the
// outcome is unknown — never ErrNotAcquired — and the client releases whatever the call may have been granted,
// again and again while the server does not answer, so that no lock stays held by nobody for its lease.

// sleepServer makes srv sleep for d (DEBUG SLEEP) and returns once it does: a PING on a fresh connection gets no
// answer. The returned channel is closed when the server answers again.
func sleepServer(t *testing.T, srv *redistest.Server, d time.Duration) <-chan struct{} {
	t.Helper()
	awake := make(chan struct{})
	go func() { // owned by the test: returns when the server wakes
		defer close(awake)
		_, _ = srv.Do(context.Background(), "DEBUG", "SLEEP", strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
	}()
	eventually(t, 5*time.Second, "the server to sleep", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := srv.Do(ctx, "PING")
		return err != nil
	})
	t.Cleanup(func() { <-awake })
	return awake
}

// orphanCounter counts the Observer's orphan events.
type orphanCounter struct {
	rlock.NopObserver
	released, expired atomic.Int64
}

func (o *orphanCounter) Orphan(e rlock.OrphanEvent) {
	if e.Released {
		o.released.Add(1)
	} else {
		o.expired.Add(1)
	}
}

// ambiguousCall is one acquire of the scenario below, on a lock of its own.
type ambiguousCall struct {
	name string
	// waits: its wait is shorter than the response timeout, so it ends first, with the attempt in flight.
	waits bool
	run   func(ctx context.Context, c *rlock.Client) error
}

// ambiguousCalls are acquires of every kind and form, each on a free lock of its own: the server grants each one
// that it runs.
func ambiguousCalls() []ambiguousCall {
	const wait = 300 * time.Millisecond
	one := func(_ context.Context, err error) error { return err }
	fenced := func(_ context.Context, _ int64, err error) error { return err }
	return []ambiguousCall{
		{"lock", false, func(ctx context.Context, c *rlock.Client) error { return one(c.Lock("lock").Lock(ctx)) }},
		{"try-wait", true, func(ctx context.Context, c *rlock.Client) error {
			return one(c.Lock("try-wait").TryLock(ctx, wait, 0))
		}},
		{"try-now", false, func(ctx context.Context, c *rlock.Client) error {
			return one(c.Lock("try-now").TryLock(ctx, 0, 10*time.Second))
		}},
		{"async", false, func(ctx context.Context, c *rlock.Client) error {
			return one(c.Lock("async").LockAsync(ctx).Get(ctx))
		}},
		{"fair", false, func(ctx context.Context, c *rlock.Client) error {
			return one(c.FairLock("fair").Lock(ctx))
		}},
		{"fair-try", true, func(ctx context.Context, c *rlock.Client) error {
			return one(c.FairLock("fair-try").TryLock(ctx, wait, 0))
		}},
		{"fenced", false, func(ctx context.Context, c *rlock.Client) error {
			return fenced(c.FencedLock("fenced").Lock(ctx))
		}},
		{"read", false, func(ctx context.Context, c *rlock.Client) error {
			return one(c.ReadWriteLock("read").ReadLock().Lock(ctx))
		}},
		{"write", true, func(ctx context.Context, c *rlock.Client) error {
			return one(c.ReadWriteLock("write").WriteLock().TryLock(ctx, wait, 0))
		}},
	}
}

// runAmbiguous starts every call at once, lets fault make their replies miss the response timeout, and checks
// what each returned: an *OutcomeUnknownError whose cause is the transport's loss, or, for a call whose wait
// ended first, the end of its wait.
func runAmbiguous(t *testing.T, c *rlock.Client, ctx context.Context, calls []ambiguousCall, fault func()) {
	t.Helper()
	fault()
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, cl := range calls {
		wg.Add(1)
		go func() { // owned by the test; waited for by wg
			defer wg.Done()
			errs[i] = cl.run(ctx, c)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		cl := calls[i]
		var ou *rlock.OutcomeUnknownError
		switch {
		case err == nil:
			t.Errorf("%s: acquired although the server never answered in time", cl.name)
		case errors.Is(err, rlock.ErrNotAcquired):
			t.Errorf("%s: %v: ErrNotAcquired for an acquire whose outcome is unknown", cl.name, err)
		case !errors.Is(err, rlock.ErrOutcomeUnknown) || !errors.As(err, &ou):
			t.Errorf("%s: %v, want an *OutcomeUnknownError", cl.name, err)
		case cl.waits == errors.Is(err, conn.ErrConnLost):
			t.Errorf("%s: %v: want the cause to be the connection's loss, or the wait's end for a short wait", cl.name, err)
		case ou.Name != cl.name || !ou.Releasing:
			t.Errorf("%s: %+v: wrong name, or not releasing", cl.name, ou)
		}
	}
}

// noHoldLeft waits until none of the calls' locks exists any more, well before their lease (30 s) could end them.
func noHoldLeft(t *testing.T, srv server, calls []ambiguousCall) {
	t.Helper()
	for _, cl := range calls {
		eventually(t, 10*time.Second, "the orphaned grant of "+cl.name+" to be released", func() bool {
			n, err := srv.DoInt(context.Background(), "EXISTS", cl.name)
			return err == nil && n == 0
		})
	}
}

// The reproduction: DEBUG SLEEP 2 with a response timeout of 1 s and acquires of every kind in flight. A
// command the client wrote before resetting the connection may or may not run when the server wakes (the reset
// may discard it), so the number of grants varies; none may be left behind, and none may be given up on.
func TestAmbiguousAcquiresAgainstASleepingServer(t *testing.T) {
	srv := redistest.Start(t)
	obs := &orphanCounter{}
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: srv.Addr(), ResponseTimeout: time.Second},
		Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := ctxT(t, 30*time.Second)
	warmScripts(t, c, ctx) // connections up and scripts loaded before the server sleeps
	calls := ambiguousCalls()
	var awake <-chan struct{}
	runAmbiguous(t, c, ctx, calls, func() { awake = sleepServer(t, srv, 2*time.Second) })
	<-awake
	noHoldLeft(t, srv, calls)
	s := c.Stats()
	if s.OrphansExpired != 0 || s.Held != 0 || s.Waiters != 0 || s.OrphansReleased > int64(len(calls)) {
		t.Fatalf("Stats = %+v, want no orphan left to expire, at most %d released, nothing held or waiting", s, len(calls))
	}
	if r, e := obs.released.Load(), obs.expired.Load(); r != s.OrphansReleased || e != 0 {
		t.Fatalf("Observer: %d orphans released, %d left to expire; Stats: %+v", r, e, s)
	}
	t.Logf("%d of %d ambiguous acquires had been granted; all released", s.OrphansReleased, len(calls))
}

// warmScripts loads every script the calls use (an EVALSHA the server does not know yet never runs: its NOSCRIPT
// reply, held up, would leave nothing to release).
func warmScripts(t *testing.T, c *rlock.Client, ctx context.Context) {
	t.Helper()
	mustUnlock(t, c.Lock("warm"), mustLock(t, c.Lock("warm"), ctx))
	f := c.FairLock("warm-fair")
	held, err := f.Lock(ctx)
	if err == nil {
		err = f.Unlock(held)
	}
	fl := c.FencedLock("warm-fenced")
	if err == nil {
		held, _, err = fl.Lock(ctx)
	}
	if err == nil {
		err = fl.Unlock(held)
	}
	rw := c.ReadWriteLock("warm-rw")
	if err == nil {
		held, err = rw.ReadLock().Lock(ctx)
	}
	if err == nil {
		err = rw.ReadLock().Unlock(held)
	}
	if err == nil {
		held, err = rw.WriteLock().Lock(ctx)
	}
	if err == nil {
		err = rw.WriteLock().Unlock(held)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// The same acquires, with their commands delivered and run at once but every reply held up in a proxy for 3 s:
// every call was granted, and the first releases of the grants time out too (they may run: their replies are
// held up as well). The releases are sent again until the replies flow, and every grant is released.
func TestAmbiguousAcquiresReleaseEveryGrantOnceRepliesFlow(t *testing.T) {
	srv := redistest.Start(t)
	px := faultproxy.Start(t, srv.Addr())
	obs := &orphanCounter{}
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: px.Addr(), ResponseTimeout: time.Second},
		Observer: obs, RetryDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := ctxT(t, 30*time.Second)
	calls := ambiguousCalls()
	warmScripts(t, c, ctx)
	held := time.Now()
	runAmbiguous(t, c, ctx, calls, func() { px.Stall(faultproxy.Downstream) })
	// The fault lasts 3 s: the releases sent meanwhile time out like the acquires.
	time.Sleep(3*time.Second - time.Since(held))
	if s := c.Stats(); s.OrphansReleased != 0 || s.OrphansExpired != 0 {
		t.Fatalf("Stats = %+v while no reply can arrive", s)
	}
	px.Restore()
	noHoldLeft(t, srv, calls)
	eventually(t, 5*time.Second, "every orphan counted", func() bool {
		return c.Stats().OrphansReleased == int64(len(calls))
	})
	if s := c.Stats(); s.OrphansExpired != 0 || s.Held != 0 || s.Waiters != 0 {
		t.Fatalf("Stats = %+v, want nothing left to expire, held or waiting", s)
	}
	if r, e := obs.released.Load(), obs.expired.Load(); r != int64(len(calls)) || e != 0 {
		t.Fatalf("Observer: %d orphans released, %d left to expire; want %d and 0", r, e, len(calls))
	}
}

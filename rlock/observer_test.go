package rlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// recorder is an Observer that keeps what it is told and signals each event on a channel.
type recorder struct {
	NopObserver
	mu       sync.Mutex
	acquired []AcquiredEvent
	failed   []AcquireFailedEvent
	released []ReleasedEvent
	conns    []conn.Event
	denied   []PubSubDeniedEvent
	signal   chan string
}

func newRecorder() *recorder { return &recorder{signal: make(chan string, 1024)} }

func (r *recorder) note(kind string) {
	select {
	case r.signal <- kind:
	default:
	}
}

func (r *recorder) Acquired(e AcquiredEvent) {
	r.mu.Lock()
	r.acquired = append(r.acquired, e)
	r.mu.Unlock()
	r.note("acquired")
}

func (r *recorder) AcquireFailed(e AcquireFailedEvent) {
	r.mu.Lock()
	r.failed = append(r.failed, e)
	r.mu.Unlock()
	r.note("failed")
}

func (r *recorder) Released(e ReleasedEvent) {
	r.mu.Lock()
	r.released = append(r.released, e)
	r.mu.Unlock()
	r.note("released")
}

func (r *recorder) Connection(e conn.Event) {
	r.mu.Lock()
	r.conns = append(r.conns, e)
	r.mu.Unlock()
	r.note("conn:" + e.Kind.String())
}

func (r *recorder) PubSubDenied(e PubSubDeniedEvent) {
	r.mu.Lock()
	r.denied = append(r.denied, e)
	r.mu.Unlock()
	r.note("denied")
}

// await waits for the next event of kind, bounded.
func (r *recorder) await(t *testing.T, kind string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case k := <-r.signal:
			if k == kind {
				return
			}
		case <-timeout:
			t.Fatalf("no %s event within 10 s", kind)
		}
	}
}

func (r *recorder) lastFailed() AcquireFailedEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed[len(r.failed)-1]
}

type traceKey struct{}

// Failed acquires are reported once each, with how they ended, the time waited and the caller's context; released
// locks with the release's duration and the held context.
func TestObserverSeesFailedAcquiresAndReleases(t *testing.T) {
	srv := redistest.Start(t)
	rec := newRecorder()
	c := relayClient(t, srv, rec)
	ctx := context.WithValue(context.Background(), traceKey{}, "span-1")
	l := c.Lock("observed")

	held, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec.await(t, "acquired")

	// Timeout: the wait ran out.
	if _, err := l.TryLock(context.Background(), 30*time.Millisecond, 0); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("TryLock = %v, want ErrNotAcquired", err)
	}
	rec.await(t, "failed")
	if e := rec.lastFailed(); e.Outcome != AcquireTimeout || e.Wait < 30*time.Millisecond || e.Name != "observed" ||
		e.Owner == "" || !errors.Is(e.Err, ErrNotAcquired) {
		t.Errorf("TryLock's event = %+v; want a timeout after at least 30ms", e)
	}
	// A single refused attempt is a timeout too.
	if _, err := l.TryLockAsync(context.Background(), 0, 0).Get(context.Background()); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("TryLockAsync = %v, want ErrNotAcquired", err)
	}
	rec.await(t, "failed")
	if e := rec.lastFailed(); e.Outcome != AcquireTimeout {
		t.Errorf("a refused TryLock's event = %+v; want a timeout", e)
	}

	// Canceled: the caller's context ended while it waited (blocking and async).
	for _, async := range []bool{false, true} {
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			var err error
			if async {
				_, err = l.LockAsync(cctx).Get(context.Background())
			} else {
				_, err = l.Lock(cctx)
			}
			done <- err
		}()
		waitFor(t, func() bool { return c.Stats().Waiters == 1 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Lock with a cancelled context = %v", err)
		}
		rec.await(t, "failed")
		e := rec.lastFailed()
		if e.Outcome != AcquireCanceled || e.Wait <= 0 || e.Ctx == nil || e.Ctx.Value(traceKey{}) != "span-1" {
			t.Errorf("cancelled Lock's event (async %v) = %+v; want canceled, with the caller's context", async, e)
		}
	}

	// Error: a key of another type.
	if _, err := srv.Do(ctx, "SET", "str", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lock("str").Lock(ctx); !errors.Is(err, ErrNotLock) {
		t.Fatalf("Lock on a string = %v", err)
	}
	rec.await(t, "failed")
	if e := rec.lastFailed(); e.Outcome != AcquireError || !errors.Is(e.Err, ErrNotLock) {
		t.Errorf("the failed Lock's event = %+v; want an error", e)
	}
	// Bad input, before anything was sent.
	if _, err := c.Lock("").Lock(ctx); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Lock(\"\") = %v", err)
	}
	rec.await(t, "failed")
	if e := rec.lastFailed(); e.Outcome != AcquireError || e.Owner != "" {
		t.Errorf("the invalid Lock's event = %+v; want an error without an owner", e)
	}

	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	rec.await(t, "released")
	rec.mu.Lock()
	rel := rec.released[len(rec.released)-1]
	nFailed, nAcquired := len(rec.failed), len(rec.acquired)
	rec.mu.Unlock()
	if rel.Err != nil || rel.Took <= 0 || rel.Held < rel.Took || rel.Ctx == nil || rel.Ctx.Value(traceKey{}) != "span-1" {
		t.Errorf("Released = %+v; want a successful release with its duration and the held context", rel)
	}
	if nFailed != 6 || nAcquired != 1 {
		t.Errorf("%d failures and %d grants reported, want 6 and 1 (each call once)", nFailed, nAcquired)
	}
	for _, s := range []AcquireOutcome{AcquireTimeout, AcquireCanceled, AcquireError, 9} {
		if s.String() == "" {
			t.Errorf("AcquireOutcome(%d) prints empty", s)
		}
	}
}

// The transport's connection events reach the Observer, after the caller's own OnEvent.
func TestObserverSeesConnectionEvents(t *testing.T) {
	srv := redistest.Start(t)
	rec := newRecorder()
	var mu sync.Mutex
	var hook []conn.EventKind
	c, err := NewClient(Config{Observer: rec, Conn: conn.Config{Addr: srv.Addr(), OnEvent: func(e conn.Event) {
		mu.Lock()
		hook = append(hook, e.Kind)
		mu.Unlock()
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec.await(t, "conn:connected")
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	rec.await(t, "conn:lost")
	rec.await(t, "conn:reconnected")
	mu.Lock()
	n := len(hook)
	mu.Unlock()
	if n < 3 {
		t.Errorf("Conn.OnEvent saw %d events, want at least 3: the Observer must not replace it", n)
	}
}

// nopEmbedder is an Observer that counts nothing: every event goes to the NopObserver it embeds. (A NopObserver
// itself is recognised by the Client, which then builds no events at all.)
type nopEmbedder struct{ NopObserver }

// NopObserver, which an Observer embeds for the events it does not count, ignores every event: a Client observed
// by an Observer made of it alone acquires, refuses, renews, loses and releases as without an observer, and a
// refused publish (a user without channel permissions) is no failure either.
func TestNopObserverIgnoresEveryEvent(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := srv.Do(ctx, "ACL", "SETUSER", "nochan", "on", ">pw", "~*", "+@all", "resetchannels"); err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(Config{Observer: nopEmbedder{}, WatchdogTimeout: time.Second,
		Conn: conn.Config{Addr: srv.Addr(), Username: "nochan", Password: "pw"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l := c.Lock("nop")
	held, err := l.Lock(ctx) // Acquired (and Connection events on the way)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryLock(ctx, 0, 0); !errors.Is(err, ErrNotAcquired) { // AcquireFailed
		t.Fatalf("TryLock by another owner = %v, want ErrNotAcquired", err)
	}
	if err := l.Unlock(held); err != nil { // Released; its publish refused: PubSubDenied
		t.Fatalf("Unlock: %v", err)
	}
	if c.Stats().PublishesRefused == 0 {
		t.Fatal("the release's publish was not refused: the test does not reach PubSubDenied")
	}
	held, err = l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "DEL", "nop"); err != nil { // the next renewal finds it gone: RenewalBatch, Lost
		t.Fatal(err)
	}
	select {
	case <-held.Done():
	case <-ctx.Done():
		t.Fatal("the lock deleted behind its holder's back was never reported lost")
	}
	if cause := context.Cause(held); !errors.Is(cause, ErrLockLost) {
		t.Fatalf("cause %v, want ErrLockLost", cause)
	}
}

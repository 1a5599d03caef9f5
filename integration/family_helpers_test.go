package integration

import (
	"context"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// famClient connects an rlock.Client to srv for the family tests and closes it when the test ends. watchdog 0
// takes the default.
func famClient(t testing.TB, srv *redistest.Server, watchdog time.Duration) *rlock.Client {
	t.Helper()
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: srv.Addr()}, WatchdogTimeout: watchdog})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// famCtx returns a context bounded by d, cancelled when the test ends.
func famCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// famDone waits for ctx to be cancelled, at most d, and returns its cause.
func famDone(t testing.TB, ctx context.Context, d time.Duration) error {
	t.Helper()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(d):
		t.Fatalf("context not cancelled within %v", d)
		return nil
	}
}

// famEventually polls cond every few milliseconds until it holds, failing the test after d. It is for server-side
// states that send no event a test could await (a client subscribed, a key expired).
func famEventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// famSubscribed waits until some client is subscribed to channel: a waiter is then waiting.
func famSubscribed(t testing.TB, srv *redistest.Server, channel string) {
	t.Helper()
	famEventually(t, 5*time.Second, "subscribed to "+channel, func() bool {
		r, err := srv.Do(context.Background(), "PUBSUB", "NUMSUB", channel)
		return err == nil && len(r.Array) == 2 && r.Array[1].Int > 0
	})
}

package integration

import (
	"context"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// newLockClient connects an rlock.Client to srv and closes it when the test ends. watchdog 0 takes the default.
func newLockClient(t testing.TB, srv *redistest.Server, watchdog time.Duration) *rlock.Client {
	t.Helper()
	c, err := rlock.NewClient(rlock.Config{
		Conn:            conn.Config{Addr: srv.Addr()},
		WatchdogTimeout: watchdog,
	})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ctxT returns a context bounded by d, cancelled when the test ends.
func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func mustLock(t testing.TB, l *rlock.Lock, ctx context.Context) context.Context {
	t.Helper()
	held, err := l.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock(%s): %v", l.Name(), err)
	}
	return held
}

func mustUnlock(t testing.TB, l *rlock.Lock, held context.Context) {
	t.Helper()
	if err := l.Unlock(held); err != nil {
		t.Fatalf("Unlock(%s): %v", l.Name(), err)
	}
}

func hgetall(t testing.TB, srv *redistest.Server, key string) map[string]string {
	t.Helper()
	m, err := srv.DoMap(context.Background(), "HGETALL", key)
	if err != nil {
		t.Fatalf("HGETALL %s: %v", key, err)
	}
	return m
}

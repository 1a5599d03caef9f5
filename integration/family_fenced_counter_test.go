package integration

import (
	"context"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// A fenced lock's token counter can be lost (deleted, or gone with a server restarted without persistence). The
// acquire script then seeds it from the server's clock in microseconds, so tokens after the loss are still larger
// than every token before it, as long as the server's clock moved forward meanwhile.

// fencedCounterKey is the token counter of the fenced lock called name, in Redisson's keyspace.
func fencedCounterKey(name string) string { return "redisson_lock_token:{" + name + "}" }

// grantTokens takes and releases the fenced lock n times and returns the tokens, each larger than the previous.
func grantTokens(t *testing.T, l *rlock.FencedLock, ctx context.Context, n int) []int64 {
	t.Helper()
	var tokens []int64
	for range n {
		held, tok, err := l.TryLock(ctx, 5*time.Second, 0)
		if err != nil {
			t.Fatalf("TryLock: %v", err)
		}
		if len(tokens) > 0 && tok <= tokens[len(tokens)-1] {
			t.Fatalf("token %d after %v: not larger", tok, tokens)
		}
		tokens = append(tokens, tok)
		if err := l.Unlock(held); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	}
	return tokens
}

func TestFencedLockTokensGrowAfterTheCounterIsDeleted(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	l := c.FencedLock("fenced:deleted")
	key := fencedCounterKey("fenced:deleted")

	before := grantTokens(t, l, ctx, 3)
	if n, err := srv.DoInt(ctx, "DEL", key); err != nil || n != 1 {
		t.Fatalf("DEL %s = %d, %v; want the counter deleted", key, n, err)
	}
	held, tok, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last := before[len(before)-1]; tok <= last {
		t.Fatalf("token %d after the counter was deleted, want above %d (tokens before: %v)", tok, last, before)
	}
	// A re-entry after another loss: its token is larger too.
	if _, err := srv.Do(ctx, "DEL", key); err != nil {
		t.Fatal(err)
	}
	_, again, err := l.TryLock(held, 0, 0)
	if err != nil || again <= tok {
		t.Fatalf("re-entry after the counter was deleted: token %d, err %v; want above %d", again, err, tok)
	}
	for range 2 {
		mustUnlockFenced(t, l, held)
	}
}

// A real restart of a server without persistence loses the counter with everything else: tokens after the restart
// are larger than every token before it.
func TestFencedLockTokensGrowAcrossARestartWithoutPersistence(t *testing.T) {
	srv := redistest.Start(t) // no persistence: a restart empties the server
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 20*time.Second)
	l := c.FencedLock("fenced:restart")

	before := grantTokens(t, l, ctx, 3)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if n, err := srv.DoInt(ctx, "EXISTS", fencedCounterKey("fenced:restart")); err != nil || n != 0 {
		t.Fatalf("EXISTS counter after the restart = %d, %v; want it gone", n, err)
	}
	after := grantTokens(t, l, ctx, 3)
	if last := before[len(before)-1]; after[0] <= last {
		t.Fatalf("tokens after the restart %v, want all above those before it %v", after, before)
	}
}

func mustUnlockFenced(t *testing.T, l *rlock.FencedLock, held context.Context) {
	t.Helper()
	if err := l.Unlock(held); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

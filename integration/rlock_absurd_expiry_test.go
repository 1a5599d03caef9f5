package integration

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// Durations read from the server are clamped: a key given an absurd expiry by something else than a lock client
// (PEXPIREAT near 2^63 ms, which the server accepts) reports a PTTL that overflows a time.Duration when converted
// as it is. A waiter bounded by such an overflowed value would attempt again every millisecond; clamped, it waits
// for a release (or its own deadline) as it does behind any long lease.

// absurdExpiryAt is an expiry instant (Unix ms) close to the largest the server accepts.
const absurdExpiryAt = "9223372036854775000"

// absurdWait is the wait of the refused calls below: a spinning waiter would send hundreds of scripts in it.
const absurdWait = 600 * time.Millisecond

// maxScriptsInAbsurdWait is how many scripts a refused call with absurdWait may send: its first attempt, one at
// its deadline, the queue's leave, and a little slack for a refresh.
const maxScriptsInAbsurdWait = 6

// scriptsRun returns how many EVALSHA and EVAL calls the server ran without an error: the NOSCRIPT refusal of a
// script's first EVALSHA (the client then loads it and sends it again) is not counted.
func scriptsRun(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	st, err := srv.Info(context.Background(), "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, k := range []string{"cmdstat_evalsha", "cmdstat_eval"} {
		for _, f := range splitStat(st[k]) {
			c, _ := strconv.ParseInt(f[1], 10, 64)
			switch f[0] {
			case "calls":
				n += c
			case "failed_calls", "rejected_calls":
				n -= c
			}
		}
	}
	return n
}

// holdForever writes a lock held by a Redisson-style owner with raw commands (its HASH, one hold) and gives it an
// absurd expiry.
func holdForever(t *testing.T, srv *redistest.Server, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := srv.Do(ctx, "HSET", name, javaOwner, "1"); err != nil {
		t.Fatal(err)
	}
	if n, err := srv.DoInt(ctx, "PEXPIREAT", name, absurdExpiryAt); err != nil || n != 1 {
		t.Fatalf("PEXPIREAT %s %s = %d, %v", name, absurdExpiryAt, n, err)
	}
	if ms, _ := srv.DoInt(ctx, "PTTL", name); ms < 1<<62 {
		t.Fatalf("PTTL %d: the server did not keep the absurd expiry", ms)
	}
}

// century is the clamp of a reported remaining time.
const century = 100 * 365 * 24 * time.Hour

func TestTryLockOnAKeyWithAnAbsurdExpiryDoesNotSpin(t *testing.T) {
	srv := redistest.Start(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	l := c.Lock("absurd")
	holdForever(t, srv, "absurd")

	before := scriptsRun(t, srv)
	if _, err := l.TryLock(ctx, absurdWait, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryLock on a key held forever = %v, want ErrNotAcquired", err)
	}
	n := scriptsRun(t, srv) - before
	t.Logf("TryLock with a %v wait sent %d scripts", absurdWait, n)
	if n > maxScriptsInAbsurdWait {
		t.Fatalf("TryLock with a %v wait sent %d scripts, want at most %d: the waiter spun on an overflowed PTTL",
			absurdWait, n, maxScriptsInAbsurdWait)
	}

	// The reports are clamped too: positive, a century at most.
	if ttl, err := l.RemainTimeToLive(ctx); err != nil || ttl != century {
		t.Fatalf("RemainTimeToLive = %v, %v; want the clamp, %v", ttl, err, century)
	}
	if st, err := l.Status(ctx); err != nil || !st.Locked || st.TTL != century {
		t.Fatalf("Status = %+v, %v; want locked with TTL %v", st, err, century)
	}
}

// A blocked Lock behind such a key is still woken at once by a release made the way Redisson makes it: DEL of the
// lock and "0" published on its channel.
func TestLockBehindAnAbsurdExpiryIsWokenByARedissonRelease(t *testing.T) {
	srv := redistest.Start(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	l := c.Lock("absurd")
	holdForever(t, srv, "absurd")

	before := scriptsRun(t, srv)
	waiter := l.LockAsync(ctx)
	subscribed(t, srv, "redisson_lock__channel:{absurd}")
	eventually(t, 5*time.Second, "the waiter queued", func() bool {
		n, _ := srv.DoInt(ctx, "LLEN", "locksmith_lock_queue:{absurd}")
		return n == 1
	})
	// Just after the waiter's first attempt: its next refresh (every 5 s / 3 for a watchdog lock) is far off, so
	// only the message can wake it within wakeBound.
	const wakeBound = time.Second
	if n := scriptsRun(t, srv) - before; n > 2 {
		t.Fatalf("%d scripts before the release, want the waiter's one attempt", n)
	}
	start := time.Now()
	if _, err := srv.Do(ctx, "DEL", "absurd"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "PUBLISH", "redisson_lock__channel:{absurd}", "0"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, wakeBound)
	defer cancel()
	held, err := waiter.Get(wctx)
	if err != nil {
		t.Fatalf("the waiter was not granted within %v of the release: %v", wakeBound, err)
	}
	t.Logf("granted %v after the release", time.Since(start))
	mustUnlock(t, l, held)
}

// A permit-expirable semaphore whose only permit was given an absurd lease by raw commands: a refused TryAcquire
// waits out its wait instead of attempting every millisecond.
func TestPermitSemaphoreWithAnAbsurdLeaseDoesNotSpin(t *testing.T) {
	srv := redistest.Start(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	s := c.PermitExpirableSemaphore("absurd-pes")
	if ok, err := s.TrySetPermits(ctx, 0); !ok || err != nil {
		t.Fatalf("TrySetPermits: %v %v", ok, err)
	}
	if _, err := srv.Do(ctx, "ZADD", "{absurd-pes}:timeout", absurdExpiryAt, "forever"); err != nil {
		t.Fatal(err)
	}
	before := scriptsRun(t, srv)
	if _, err := s.TryAcquire(ctx, absurdWait, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire = %v, want ErrNotAcquired", err)
	}
	n := scriptsRun(t, srv) - before
	t.Logf("TryAcquire with a %v wait sent %d scripts", absurdWait, n)
	if n > maxScriptsInAbsurdWait {
		t.Fatalf("TryAcquire with a %v wait sent %d scripts, want at most %d", absurdWait, n, maxScriptsInAbsurdWait)
	}
}

// A fixed-window counter given an absurd expiry: the window ends beyond any wait, so a refused TryAcquire gives up
// at once.
func TestFixedWindowWithAnAbsurdExpiryGivesUpAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	l := c.FixedWindowLimiter("absurd-window", 1, time.Second)
	if _, err := srv.Do(ctx, "SET", "absurd-window", "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "PEXPIREAT", "absurd-window", absurdExpiryAt); err != nil {
		t.Fatal(err)
	}
	before := scriptsRun(t, srv)
	ok, err := l.TryAcquire(ctx, 1, absurdWait)
	if err != nil || ok {
		t.Fatalf("TryAcquire = %v, %v; want false", ok, err)
	}
	if n := scriptsRun(t, srv) - before; n != 1 {
		t.Fatalf("TryAcquire sent %d scripts, want 1: the window's end is beyond the wait", n)
	}
}

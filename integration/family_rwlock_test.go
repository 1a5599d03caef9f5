package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/rlock"
)

func TestRWLockIndependentReadLeasesExpireOnTime(t *testing.T) {
	srv := startServer(t)
	a, b, w := newLockClient(t, srv, 0), newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	start := time.Now()
	heldA, err := a.ReadWriteLock("rw").ReadLock().LockLease(ctx, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReadWriteLock("rw").ReadLock().LockLease(ctx, 900*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if cause := doneCause(t, heldA, time.Second); !errors.Is(cause, rlock.ErrLeaseExpired) {
		t.Fatalf("A's held cause %v", cause)
	}
	// A's hold ended; B's still holds: the writer is refused.
	if _, err := w.ReadWriteLock("rw").WriteLock().TryLock(ctx, 0, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("writer while B reads: %v", err)
	}
	held, err := w.ReadWriteLock("rw").WriteLock().TryLock(ctx, 3*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 850*time.Millisecond || d > 1300*time.Millisecond {
		t.Fatalf("writer got in after %v, want when B's 900 ms lease ended", d)
	}
	w.ReadWriteLock("rw").WriteLock().Unlock(held)
}

func TestRWLockWriterWaitsForEveryReader(t *testing.T) {
	srv := startServer(t)
	ctx := ctxT(t, 10*time.Second)
	var readers []context.Context
	var rcs []*rlock.Client
	for range 3 {
		c := newLockClient(t, srv, 0)
		held, err := c.ReadWriteLock("rw").ReadLock().Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		readers, rcs = append(readers, held), append(rcs, c)
	}
	w := newLockClient(t, srv, 0)
	fut := w.ReadWriteLock("rw").WriteLock().TryLockAsync(ctx, 5*time.Second, 0)
	subscribed(t, srv, "redisson_rwlock:{rw}")
	for i := range 2 {
		if err := rcs[i].ReadWriteLock("rw").ReadLock().Unlock(readers[i]); err != nil {
			t.Fatal(err)
		}
		if fut.IsDone() {
			t.Fatalf("writer got in with %d readers left", 2-i)
		}
	}
	if m, _ := w.ReadWriteLock("rw").Mode(ctx); m != "read" {
		t.Fatalf("mode %q with one reader left", m)
	}
	start := time.Now()
	if err := rcs[2].ReadWriteLock("rw").ReadLock().Unlock(readers[2]); err != nil {
		t.Fatal(err)
	}
	held, err := fut.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("writer got in %v after the last reader left", d)
	}
	w.ReadWriteLock("rw").WriteLock().Unlock(held)
}

func TestRWLockTwentyReadersBlockedByAWriterAllProceedWhenItLeaves(t *testing.T) {
	srv := startServer(t)
	w, r1, r2 := newLockClient(t, srv, 0), newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	held, err := w.ReadWriteLock("rw").WriteLock().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	futs := make([]*future.Future[context.Context], 20)
	for i := range futs {
		c := r1
		if i%2 == 1 {
			c = r2
		}
		futs[i] = c.ReadWriteLock("rw").ReadLock().TryLockAsync(ctx, 5*time.Second, 0)
	}
	eventually(t, 5*time.Second, "both reader clients waiting", func() bool {
		r, err := srv.Do(ctx, "PUBSUB", "NUMSUB", "redisson_rwlock:{rw}")
		return err == nil && r.Array[1].Int == 2
	})
	for _, f := range futs {
		if f.IsDone() {
			t.Fatal("a reader got in under the writer")
		}
	}
	start := time.Now()
	if err := w.ReadWriteLock("rw").WriteLock().Unlock(held); err != nil {
		t.Fatal(err)
	}
	if _, err := future.All(futs...).Get(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("readers all in %v after the writer left", d)
	}
	h, _ := srv.DoMap(ctx, "HGETALL", "rw")
	if h["mode"] != "read" || len(h) != 21 {
		t.Fatalf("lock after the readers entered: mode %q, %d fields; want read and 20 readers", h["mode"], len(h)-1)
	}
}

func TestRWLockDeadClientsReadLockExpiresAndLetsTheWriterIn(t *testing.T) {
	srv := startServer(t)
	const watchdog = 600 * time.Millisecond
	d := newLockClient(t, srv, watchdog)
	w := newLockClient(t, srv, watchdog)
	ctx := ctxT(t, 10*time.Second)
	if _, err := d.ReadWriteLock("rw").ReadLock().Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// The reader's watchdog keeps it past its lease while its client lives.
	time.Sleep(2 * watchdog)
	if _, err := w.ReadWriteLock("rw").WriteLock().TryLock(ctx, 0, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("writer while the reader lives: %v", err)
	}
	// The reader's process dies.
	start := time.Now()
	d.Close()
	held, err := w.ReadWriteLock("rw").WriteLock().TryLock(ctx, 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > watchdog+300*time.Millisecond {
		t.Fatalf("writer got in %v after the reader died, want within the watchdog timeout %v", el, watchdog)
	}
	w.ReadWriteLock("rw").WriteLock().Unlock(held)
}

func TestRWLockReentersDowngradesAndRefusesUpgrade(t *testing.T) {
	srv := startServer(t)
	a, b := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	rw := a.ReadWriteLock("rw")
	wh, err := rw.WriteLock().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := rw.WriteLock().Lock(wh); err != nil || again != wh {
		t.Fatalf("write re-entry: %v", err)
	}
	// Downgrade: the writer takes the read lock too, then drops the write lock.
	rh, err := rw.ReadLock().Lock(wh)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := rw.ReadLock().HoldCount(rh); n != 1 {
		t.Fatalf("read holds %d", n)
	}
	if n, _ := rw.WriteLock().HoldCount(wh); n != 2 {
		t.Fatalf("write holds %d", n)
	}
	if _, err := b.ReadWriteLock("rw").ReadLock().TryLock(ctx, 0, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("other reader under the writer: %v", err)
	}
	rw.WriteLock().Unlock(wh)
	if err := rw.WriteLock().Unlock(wh); err != nil {
		t.Fatal(err)
	}
	if m, _ := rw.Mode(ctx); m != "read" {
		t.Fatalf("mode after the downgrade %q", m)
	}
	// Now another reader may enter.
	bh, err := b.ReadWriteLock("rw").ReadLock().TryLock(ctx, time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A reader asking for the write lock would wait for itself: refused at once.
	if _, err := rw.WriteLock().TryLock(rh, time.Second, 0); !errors.Is(err, rlock.ErrLockUpgrade) {
		t.Fatalf("upgrade: %v, want ErrLockUpgrade", err)
	}
	if _, err := rw.WriteLock().LockAsync(rh).Get(ctx); !errors.Is(err, rlock.ErrLockUpgrade) {
		t.Fatalf("async upgrade: %v, want ErrLockUpgrade", err)
	}
	rw.ReadLock().Unlock(rh)
	b.ReadWriteLock("rw").ReadLock().Unlock(bh)
	if m, _ := rw.Mode(ctx); m != "" {
		t.Fatalf("mode after all left %q", m)
	}
}

func TestRWLockWatchdogRenewsReaders(t *testing.T) {
	srv := startServer(t)
	const watchdog = time.Second // renewed every third of it: slack for a loaded machine
	a, w := newLockClient(t, srv, watchdog), newLockClient(t, srv, watchdog)
	ctx := ctxT(t, 10*time.Second)
	held, err := a.ReadWriteLock("rw").ReadLock().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held2, err := a.ReadWriteLock("rw").ReadLock().Lock(held)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * watchdog) // unrenewed, the holds would have expired after one
	if err := context.Cause(held2); err != nil {
		t.Fatalf("read hold lost while renewed: %v", err)
	}
	prefix := "{rw}:" + mustOwner(t, held) + ":rwlock_timeout:"
	for _, k := range []string{"rw", prefix + "1", prefix + "2"} {
		if n, _ := srv.DoInt(ctx, "EXISTS", k); n != 1 {
			t.Fatalf("%s expired although the watchdog renews it", k)
		}
	}
	if _, err := w.ReadWriteLock("rw").WriteLock().TryLock(ctx, 0, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("writer while renewed readers hold: %v", err)
	}
	a.ReadWriteLock("rw").ReadLock().Unlock(held)
	a.ReadWriteLock("rw").ReadLock().Unlock(held)
	if cause := doneCause(t, held, time.Second); !errors.Is(cause, rlock.ErrReleased) {
		t.Fatalf("cause %v", cause)
	}
}

// A Redisson client's write lock, played with raw commands in Redisson's layout, excludes this package's readers,
// and its unlock message ("1" on redisson_rwlock:{name}) wakes them; their read holds are in Redisson's layout.
func TestRWLockInteroperatesWithARedissonLayoutWriter(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	const java = "5f1c0f2e-8d3a-4b7e-9a61-2c4d5e6f7a8b:1" // a Redisson client's <uuid>:<threadId>
	srv.Do(ctx, "HSET", "rw", "mode", "write", java+":write", "1")
	srv.Do(ctx, "PEXPIRE", "rw", "30000")
	fut := c.ReadWriteLock("rw").ReadLock().TryLockAsync(ctx, 5*time.Second, 0)
	subscribed(t, srv, "redisson_rwlock:{rw}")
	if fut.IsDone() {
		t.Fatal("a reader got in under a Redisson writer")
	}
	// The Redisson writer unlocks: deletes the lock and publishes 1.
	start := time.Now()
	srv.Do(ctx, "DEL", "rw")
	srv.Do(ctx, "PUBLISH", "redisson_rwlock:{rw}", "1")
	held, err := fut.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("reader woken %v after the Redisson unlock", d)
	}
	owner := mustOwner(t, held)
	h, _ := srv.DoMap(ctx, "HGETALL", "rw")
	if h["mode"] != "read" || h[owner] != "1" {
		t.Fatalf("lock hash %v, want mode read and %s = 1", h, owner)
	}
	if n, _ := srv.DoInt(ctx, "EXISTS", "{rw}:"+owner+":rwlock_timeout:1"); n != 1 {
		t.Fatal("read hold key not in Redisson's layout")
	}
	c.ReadWriteLock("rw").ReadLock().Unlock(held)
}

// Each read hold has its own lease. An owner that re-enters its read lock with a long lease and then releases that
// hold keeps only the short one on the server: its held context must end with the short lease, not the long one
// (the reply of the read release says how long the owner's remaining holds last).
func TestRWLockReadReleaseMovesTheLocalEndToTheRemainingHold(t *testing.T) {
	srv := startServer(t)
	a, w := newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 10*time.Second)
	read := a.ReadWriteLock("rw").ReadLock()
	short, err := read.LockLease(ctx, 600*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	long, err := read.LockLease(short, 8*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := read.Unlock(long); err != nil {
		t.Fatal(err)
	}
	if cause := doneCause(t, short, 2*time.Second); !errors.Is(cause, rlock.ErrLeaseExpired) {
		t.Fatalf("held cause %v, want ErrLeaseExpired when the remaining 600 ms hold ends", cause)
	}
	// Done is closed by the timer at the hold's end, which a loaded machine may run late: 300 ms of slack.
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Fatalf("held context ended %v after the release, want by the remaining hold's end (600 ms)", d)
	}
	// The server agrees: the lock went with the short hold, and a writer gets in.
	held, err := w.ReadWriteLock("rw").WriteLock().TryLock(ctx, 2*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.ReadWriteLock("rw").WriteLock().Unlock(held)
}

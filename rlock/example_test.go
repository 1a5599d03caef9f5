package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// exampleClient starts a throwaway redis-server and a client on it for an example (a real program connects to
// its own Redis, as Example shows). stop closes both.
func exampleClient() (c *rlock.Client, srv *redistest.Server, stop func()) {
	srv, err := redistest.StartServer()
	if err != nil {
		panic(err)
	}
	c, err = rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: srv.Addr()}})
	if err != nil {
		srv.Close()
		panic(err)
	}
	return c, srv, func() { c.Close(); srv.Close() }
}

// A client, a lock, and the held context that reports what became of the lock.
func Example() {
	srv, err := redistest.StartServer() // a throwaway server: a real program connects to its own Redis
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: srv.Addr()}})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	ctx := context.Background()
	l := c.Lock("orders:42")
	held, err := l.Lock(ctx) // the watchdog renews it while it is held
	if err != nil {
		panic(err)
	}
	locked, _ := l.IsLocked(ctx)
	fmt.Println("locked:", locked)

	if err := l.Unlock(held); err != nil {
		panic(err)
	}
	fmt.Println("held context:", context.Cause(held))
	// Output:
	// locked: true
	// held context: rlock: lock released
}

// Acquiring again with the held context re-enters the lock; each Unlock releases one hold.
func ExampleLock_Lock_reentrant() {
	c, _, stop := exampleClient()
	defer stop()

	l := c.Lock("inventory")
	held, _ := l.Lock(context.Background())
	_, _ = l.Lock(held) // nested: hold count 2, still one renewal
	n, _ := l.HoldCount(held)
	fmt.Println("holds:", n)
	_ = l.Unlock(held)
	n, _ = l.HoldCount(held)
	fmt.Println("holds:", n, "still held:", held.Err() == nil)
	_ = l.Unlock(held)
	// Output:
	// holds: 2
	// holds: 1 still held: true
}

// TryLock waits a bounded time; another owner holding the lock makes it return ErrNotAcquired.
func ExampleLock_TryLock() {
	c, _, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	l := c.Lock("report")

	held, _ := l.LockLease(ctx, time.Minute) // a fixed lease, no watchdog
	_, err := l.TryLock(ctx, 100*time.Millisecond, 0)
	fmt.Println(errors.Is(err, rlock.ErrNotAcquired))
	_ = l.Unlock(held)
	// Output:
	// true
}

// The async API: LockAsync returns a future at once; waiting for it holds no goroutine of the library.
func ExampleLock_LockAsync() {
	c, _, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	l := c.Lock("batch")

	first, _ := l.Lock(ctx)
	f := l.LockAsync(ctx) // queued behind the holder
	fmt.Println("granted while held:", f.IsDone())
	_ = l.Unlock(first) // hands the lock to the waiting acquire in the same round trip

	second, err := f.Get(ctx)
	fmt.Println("granted after unlock:", err == nil)
	_, _ = l.UnlockAsync(second).Get(ctx)
	// Output:
	// granted while held: false
	// granted after unlock: true
}

// Run is executeInLock: acquire, run, always release, return the function's error.
func ExampleLock_Run() {
	c, _, stop := exampleClient()
	defer stop()
	l := c.Lock("nightly-job")

	err := l.Run(context.Background(), func(held context.Context) error {
		owner, _ := rlock.OwnerOf(held)
		fmt.Println("running as an owner of client", owner[:len(c.ID())] == c.ID())
		return nil
	})
	locked, _ := l.IsLocked(context.Background())
	fmt.Println("err:", err, "locked after:", locked)
	// Output:
	// running as an owner of client true
	// err: <nil> locked after: false
}

// WithOwner pins the owner id, so that another goroutine (or a Java service using the same id) acts as the same
// holder: here a second goroutine releases the lock the first one took.
func ExampleWithOwner() {
	c, _, stop := exampleClient()
	defer stop()
	l := c.Lock("handover")
	job := rlock.WithOwner(context.Background(), "7")

	if _, err := l.Lock(job); err != nil {
		panic(err)
	}
	done := make(chan error)
	go func() { done <- l.Unlock(rlock.WithOwner(context.Background(), "7")) }()
	fmt.Println("released by the other goroutine:", <-done)
	// Output:
	// released by the other goroutine: <nil>
}

// Unlock waits for the server's answer, up to its retries' worst case against a server that stopped answering.
// The async form bounds the caller's wait with a context instead: the release goes on in the background.
func ExampleLock_UnlockAsync() {
	c, _, stop := exampleClient()
	defer stop()
	l := c.Lock("report")
	held, _ := l.Lock(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := l.UnlockAsync(held).Get(ctx); err != nil {
		// context.DeadlineExceeded: the outcome is unknown, the lock ends with its lease at the latest.
		fmt.Println("unlock:", err)
		return
	}
	fmt.Println("released:", context.Cause(held))
	// Output:
	// released: rlock: lock released
}

// The special TTLs are not lengths of time: FormatTTL (and LockStatus's String) print what they mean.
func ExampleFormatTTL() {
	c, _, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	l := c.Lock("ttl")

	ttl, _ := l.RemainTimeToLive(ctx)
	fmt.Println(ttl, "=", rlock.FormatTTL(ttl))
	held, _ := l.LockLease(ctx, time.Minute)
	st, _ := l.Status(ctx)
	fmt.Println(st.Locked, st.TTL > 59*time.Second)
	_ = l.Unlock(held)
	st, _ = l.Status(ctx)
	fmt.Println(st)
	// Output:
	// -2ns = not locked
	// true true
	// "ttl" not locked
}

package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/rlock"
)

// exampleAddr is the Redis server the examples use: LOCKSMITH_REDIS_ADDR, else 127.0.0.1:6379. The package's
// TestMain starts a throwaway redis-server and sets the variable, so that `go test` runs every example.
func exampleAddr() string {
	if addr := os.Getenv("LOCKSMITH_REDIS_ADDR"); addr != "" {
		return addr
	}
	return "127.0.0.1:6379"
}

// exampleClient connects a client for an example, as Example does in full; stop closes it. The examples' outputs
// assume an empty keyspace: when LOCKSMITH_EXAMPLES_FLUSHALL is set (TestMain sets it for its own server only),
// the server is emptied first.
func exampleClient() (c *rlock.Client, stop func()) {
	if os.Getenv("LOCKSMITH_EXAMPLES_FLUSHALL") != "" {
		flushAll(exampleAddr())
	}
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: exampleAddr()}})
	if err != nil {
		panic(err)
	}
	return c, func() { c.Close() }
}

// flushAll empties the examples' throwaway server.
func flushAll(addr string) {
	cc, err := conn.New(conn.Config{Addr: addr})
	if err != nil {
		panic(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cc.Do(ctx, "FLUSHALL").Get(ctx); err != nil {
		panic(err)
	}
}

// A client, a lock, and the held context that reports what became of the lock. The server's address comes from
// the environment here; a program has its own configuration.
func Example() {
	addr := os.Getenv("LOCKSMITH_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: addr}})
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
	c, stop := exampleClient()
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
	c, stop := exampleClient()
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
	c, stop := exampleClient()
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
	c, stop := exampleClient()
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
	c, stop := exampleClient()
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
	c, stop := exampleClient()
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
	c, stop := exampleClient()
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

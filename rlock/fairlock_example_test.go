package rlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// famExample starts a throwaway redis-server and a client on it for the lock family's examples (a real program
// connects to its own Redis).
func famExample() (*rlock.Client, *redistest.Server, func()) {
	srv, err := redistest.StartServer()
	if err != nil {
		panic(err)
	}
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: srv.Addr()}})
	if err != nil {
		panic(err)
	}
	return c, srv, func() { c.Close(); srv.Close() }
}

// A fair lock is granted in the order of the requests; a try without wait never queues.
func ExampleFairLock() {
	c, _, stop := famExample()
	defer stop()
	ctx := context.Background()
	l := c.FairLock("report")

	held, err := l.Lock(ctx)
	if err != nil {
		panic(err)
	}
	_, err = l.TryLock(ctx, 0, 0)
	fmt.Println("try without wait:", err)

	next := l.TryLockAsync(ctx, 5*time.Second, 0) // queued on the server behind the holder
	if err := l.Unlock(held); err != nil {        // wakes the head of the queue, on its own channel
		panic(err)
	}
	h2, err := next.Get(ctx)
	fmt.Println("waiter:", err)
	l.Unlock(h2)
	// Output:
	// try without wait: rlock: lock not acquired within the wait time
	// waiter: <nil>
}

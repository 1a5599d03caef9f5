package rlock_test

import (
	"context"
	"fmt"
	"time"
)

// A fair lock is granted in the order of the requests; a try without wait never queues.
func ExampleFairLock() {
	c, stop := exampleClient()
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

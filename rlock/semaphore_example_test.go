package rlock_test

import (
	"context"
	"fmt"
	"time"
)

// A semaphore bounds how many callers work at once, across processes.
func ExampleSemaphore() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	s := c.Semaphore("export-slots")

	s.TrySetPermits(ctx, 2)
	if err := s.Acquire(ctx, 2); err != nil {
		panic(err)
	}
	ok, _ := s.TryAcquire(ctx, 1, 50*time.Millisecond)
	fmt.Println("third caller within 50ms:", ok)

	waiter := s.TryAcquireAsync(ctx, 1, 5*time.Second)
	s.Release(ctx, 1) // wakes the waiter
	ok, _ = waiter.Get(ctx)
	fmt.Println("waiter after a release:", ok)
	n, _ := s.AvailablePermits(ctx)
	fmt.Println("available:", n)
	// Output:
	// third caller within 50ms: false
	// waiter after a release: true
	// available: 0
}

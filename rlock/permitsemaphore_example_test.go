package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// Permits with ids and leases: a permit whose holder vanished comes back when its lease ends.
func ExamplePermitExpirableSemaphore() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	s := c.PermitExpirableSemaphore("workers")

	s.TrySetPermits(ctx, 1)
	id, err := s.Acquire(ctx, 100*time.Millisecond) // its holder never releases it
	if err != nil {
		panic(err)
	}
	id2, err := s.TryAcquire(ctx, time.Second, 0) // gets the permit back when the lease ends
	fmt.Println("second permit:", err, len(id2) == 32)

	fmt.Println("release the expired one:", errors.Is(s.Release(ctx, id), rlock.ErrPermitNotFound))
	fmt.Println("release the second:", s.Release(ctx, id2))
	// Output:
	// second permit: <nil> true
	// release the expired one: true
	// release the second: <nil>
}

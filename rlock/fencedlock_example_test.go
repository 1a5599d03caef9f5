package rlock_test

import (
	"context"
	"fmt"
	"time"
)

// Every acquire of a fenced lock returns a larger token; a resource that refuses tokens older than the newest it
// saw refuses a holder whose lease ended while it was paused.
func ExampleFencedLock() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	l := c.FencedLock("ledger")

	newest := int64(0)
	write := func(token int64) string {
		if token < newest {
			return "refused"
		}
		newest = token
		return "accepted"
	}

	_, t1, err := l.LockLease(ctx, 100*time.Millisecond) // this holder then pauses past its lease
	if err != nil {
		panic(err)
	}
	held2, t2, err := l.TryLock(ctx, time.Second, 0) // the next holder gets in once the lease ended
	if err != nil {
		panic(err)
	}
	fmt.Println("the later grant has the larger token:", t2 > t1)
	fmt.Println("new holder writes:", write(t2))
	fmt.Println("paused holder writes:", write(t1))
	l.Unlock(held2)
	// Output:
	// the later grant has the larger token: true
	// new holder writes: accepted
	// paused holder writes: refused
}

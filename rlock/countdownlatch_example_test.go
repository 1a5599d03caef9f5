package rlock_test

import (
	"context"
	"fmt"
)

// Awaiters are released when the count reaches zero.
func ExampleCountDownLatch() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	l := c.CountDownLatch("shards-loaded")

	l.TrySetCount(ctx, 2)
	all := l.AwaitAsync(ctx) // e.g. a coordinator in another process
	for range 2 {
		l.CountDown(ctx) // e.g. each shard loader
	}
	_, err := all.Get(ctx)
	fmt.Println("all loaded:", err)
	// Output: all loaded: <nil>
}

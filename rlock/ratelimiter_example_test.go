package rlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// At most Rate permits in any window of Interval, for all clients together.
func ExampleRateLimiter() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	r := c.RateLimiter("api-calls")

	r.TrySetRate(ctx, rlock.RateConfig{Type: rlock.RateOverall, Rate: 2, Interval: time.Second})
	for i := range 3 {
		ok, _ := r.TryAcquire(ctx, 1, 0)
		fmt.Println("call", i+1, ok)
	}
	ok, _ := r.TryAcquire(ctx, 1, 3*time.Second) // sleeps on the client's timer until the window slides
	fmt.Println("after waiting:", ok)
	// Output:
	// call 1 true
	// call 2 true
	// call 3 false
	// after waiting: true
}

// The fixed window of the usual Redis rate-limiting recipe: a counter per window.
func ExampleFixedWindowLimiter() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	l := c.FixedWindowLimiter("rate.limiting:127.0.0.1", 3, 10*time.Second)

	for range 4 {
		ok, _ := l.TryAcquire(ctx, 1, 0)
		fmt.Print(ok, " ")
	}
	fmt.Println()
	// Output: true true true false
}

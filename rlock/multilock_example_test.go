package rlock_test

import (
	"context"
	"fmt"

	"github.com/locksmith-go/locksmith/rlock"
)

// Several locks taken as one: all of them, or none.
func ExampleMultiLock() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	m := rlock.NewMultiLock(c.Lock("account:1"), c.Lock("account:2"))

	held, err := m.Lock(ctx)
	if err != nil {
		panic(err)
	}
	first, _ := c.Lock("account:1").IsLocked(ctx)
	second, _ := c.Lock("account:2").IsLocked(ctx)
	fmt.Println("locks held:", first, second)
	fmt.Println("unlock:", m.Unlock(held))
	// Output:
	// locks held: true true
	// unlock: <nil>
}

package rlock_test

import (
	"context"
	"fmt"

	"github.com/locksmith-go/locksmith/rlock"
)

// Several locks taken as one: all of them, or none.
func ExampleMultiLock() {
	c, srv, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	m := rlock.NewMultiLock(c.Lock("account:1"), c.Lock("account:2"))

	held, err := m.Lock(ctx)
	if err != nil {
		panic(err)
	}
	n, _ := srv.DoInt(ctx, "EXISTS", "account:1", "account:2")
	fmt.Println("locks held:", n)
	fmt.Println("unlock:", m.Unlock(held))
	// Output:
	// locks held: 2
	// unlock: <nil>
}

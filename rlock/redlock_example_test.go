package rlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/rlock"
)

// The Redlock algorithm over three independent masters: held with a majority, for the validity. (Three
// databases of the example server stand in for the three masters here.)
func ExampleRedLock() {
	addr := exampleAddr()
	var locks []rlock.Locker
	for db := range 3 {
		c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: addr, DB: db}})
		if err != nil {
			panic(err)
		}
		defer c.Close()
		locks = append(locks, c.Lock("deploy"))
	}
	red := rlock.NewRedLock(locks...)
	ctx := context.Background()

	held, err := red.TryLock(ctx, time.Second, 10*time.Second)
	if err != nil {
		panic(err)
	}
	validUntil, _ := held.Deadline() // lease − time spent acquiring − drift
	fmt.Println("valid for about 10s:", time.Until(validUntil) > 9*time.Second)
	fmt.Println("unlock:", red.Unlock(held))
	// Output:
	// valid for about 10s: true
	// unlock: <nil>
}

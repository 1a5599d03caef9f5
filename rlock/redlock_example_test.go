package rlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// The Redlock algorithm over three independent masters: held with a majority, for the validity.
func ExampleRedLock() {
	var locks []rlock.Locker
	for range 3 {
		srv, err := redistest.StartServer()
		if err != nil {
			panic(err)
		}
		defer srv.Close()
		c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: srv.Addr()}})
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

package future_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/future"
)

// A request/response pair as package conn uses it: the caller keeps the future,
// the transport completes the promise when the reply arrives.
func Example() {
	p := future.NewPromise[string]()
	replied := make(chan struct{})
	go func() { // stands in for the event loop that reads the reply; waited for via replied
		defer close(replied)
		p.Succeed("OK")
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reply, err := p.Future().Get(ctx)
	fmt.Println(reply, err)
	<-replied
	// Output: OK <nil>
}

func ExampleFuture_OnComplete() {
	p := future.NewPromise[int]()
	f := p.Future()
	f.OnComplete(func(v int, err error) { fmt.Println("first:", v, err) })
	f.OnComplete(func(v int, err error) { fmt.Println("second:", v, err) })
	p.Succeed(1) // runs both callbacks, in order, before returning
	f.OnComplete(func(v int, err error) { fmt.Println("late:", v, err) })
	// Output:
	// first: 1 <nil>
	// second: 1 <nil>
	// late: 1 <nil>
}

func ExampleThen() {
	ttl := future.NewPromise[int64]()
	held := future.Then(ttl.Future(), func(pttl int64, err error) (bool, error) {
		return err == nil && pttl < 0, err // a nil TTL reply means: acquired
	})
	ttl.Succeed(-1)
	fmt.Println(held.Get(context.Background()))
	// Output: true <nil>
}

func ExampleAll() {
	nodes := []*future.Future[bool]{
		future.Completed(true, nil),
		future.Completed(false, errors.New("node 2 unreachable")),
		future.Completed(true, nil),
	}
	acquired, err := future.All(nodes...).Get(context.Background())
	fmt.Println(acquired, err)
	// Output: [true false true] node 2 unreachable
}

package timer_test

import (
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/timer"
)

// A lock entry that renews itself: the entry is its own Task, so each renewal allocates only its Timeout, and the
// task re-arms itself from the worker.
type renewal struct {
	tm    *timer.Timer
	every time.Duration
	left  int
	done  chan struct{}
}

func (r *renewal) Run(*timer.Timeout) {
	fmt.Println("renew") // a real task hands the network call to another goroutine: tasks must not block
	if r.left--; r.left == 0 {
		close(r.done)
		return
	}
	if _, err := r.tm.NewTimeout(r, r.every); err != nil {
		fmt.Println(err)
	}
}

func Example() {
	tm := timer.New(timer.Config{}) // one per client, shared by every lock
	r := &renewal{tm: tm, every: 20 * time.Millisecond, left: 3, done: make(chan struct{})}
	if _, err := tm.NewTimeout(r, r.every); err != nil {
		fmt.Println(err)
		return
	}
	<-r.done

	// A response timeout that the reply beats: Cancel is exact, so true means the task will never run.
	to, _ := tm.NewTimeout(timer.TaskFunc(func(*timer.Timeout) { fmt.Println("timed out") }), 3*time.Second)
	fmt.Println("cancelled:", to.Cancel())

	unrun, err := tm.Stop()
	fmt.Println("never ran:", len(unrun), err)
	// Output:
	// renew
	// renew
	// renew
	// cancelled: true
	// never ran: 0 <nil>
}

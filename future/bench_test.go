package future_test

import (
	"context"
	"sync"
	"testing"

	"github.com/locksmith-go/locksmith/future"
)

// The figures these benchmarks produce guide the design described in doc.go and
// waiter.go: one allocation (the promise) per request/response pair, whether
// the result is there when Get is called or arrives from another goroutine.
//
//	go test -run '^$' -bench . -benchmem -count 5 ./future

var sink int

func noop(int, error) {}

// Completed before Get: the transport answered before the caller asked.
func BenchmarkNewPromiseCompleteGet(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p := future.NewPromise[int]()
		p.Succeed(i)
		v, _ := p.Future().Get(ctx)
		sink += v
	}
}

// runCompleter starts the goroutine that stands in for conn's event loop: it
// completes every promise it receives. The returned stop closes the hand-off
// channel and waits for the goroutine to end.
func runCompleter(b *testing.B) (chan<- *future.Promise[int], func()) {
	work := make(chan *future.Promise[int])
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the completer: owned by the benchmark, ends when work is closed, waited for by stop
		defer wg.Done()
		for p := range work {
			p.Succeed(1)
		}
	}()
	return work, func() {
		close(work)
		wg.Wait()
	}
}

// Completed by another goroutine while Get blocks (mostly: the pending/op
// metric is the share of Get calls that found the future still pending).
func benchGetCompletedElsewhere(b *testing.B, ctx context.Context) {
	work, stop := runCompleter(b)
	defer stop()
	pending, n := 0, 0
	b.ReportAllocs()
	for b.Loop() {
		p := future.NewPromise[int]()
		f := p.Future()
		work <- p
		if !f.IsDone() {
			pending++
		}
		v, _ := f.Get(ctx)
		sink += v
		n++
	}
	b.ReportMetric(float64(pending)/float64(n), "pending/op")
}

func BenchmarkGetCompletedElsewhere(b *testing.B) {
	b.Run("ctx=Background", func(b *testing.B) { benchGetCompletedElsewhere(b, context.Background()) })
	b.Run("ctx=WithCancel", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		benchGetCompletedElsewhere(b, ctx)
	})
}

// The same wait through Done: the channel is made on demand, a second allocation.
func BenchmarkDoneWaitCompletedElsewhere(b *testing.B) {
	work, stop := runCompleter(b)
	defer stop()
	b.ReportAllocs()
	for b.Loop() {
		p := future.NewPromise[int]()
		d := p.Future().Done()
		work <- p
		<-d
	}
}

// For comparison only: the obvious design, a future that owns a channel closed
// on completion, costs two allocations (the future and its channel) per request.
func BenchmarkBaselineChannelPerFutureCompletedElsewhere(b *testing.B) {
	type chanFuture struct {
		done chan struct{}
		v    int
	}
	work := make(chan *chanFuture)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the completer: owned by this benchmark, ends when work is closed, waited for by wg
		defer wg.Done()
		for f := range work {
			f.v = 1
			close(f.done)
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		f := &chanFuture{done: make(chan struct{})}
		work <- f
		<-f.done
		sink += f.v
	}
	close(work)
	wg.Wait()
}

func BenchmarkOnComplete(b *testing.B) {
	b.Run("before-completion", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := future.NewPromise[int]()
			p.Future().OnComplete(noop)
			p.Succeed(1)
		}
	})
	b.Run("after-completion", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := future.NewPromise[int]()
			p.Succeed(1)
			p.Future().OnComplete(noop)
		}
	})
	b.Run("three-before-completion", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := future.NewPromise[int]()
			f := p.Future()
			f.OnComplete(noop)
			f.OnComplete(noop)
			f.OnComplete(noop)
			p.Succeed(1)
		}
	})
}

func BenchmarkThen(b *testing.B) {
	ctx := context.Background()
	double := func(v int, err error) (int, error) { return 2 * v, err }
	b.ReportAllocs()
	for b.Loop() {
		p := future.NewPromise[int]()
		g := future.Then(p.Future(), double)
		p.Succeed(1)
		v, _ := g.Get(ctx)
		sink += v
	}
}

// Many goroutines each running their own request/response pairs: checks that
// the waiter pool and the promise allocation scale across Ps.
func BenchmarkNewPromiseCompleteGetParallel(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p := future.NewPromise[int]()
			p.Succeed(1)
			if v, _ := p.Future().Get(ctx); v != 1 {
				b.Error("wrong value")
			}
		}
	})
}

package rlock

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// Uncontended round trips of the fenced and fair locks and the semaphore, each goroutine on its own name, against a
// real redis-server: client cost (allocations) and pipelined throughput. Figures guide design only (shared machine).
// The plain lock's workloads are integration's BenchmarkUncontended, BenchmarkContended and
// BenchmarkHeldUnderWatchdog.
//
//	go test ./rlock -run '^$' -bench 'BenchmarkFamily' -benchtime 3s

func benchFamilyClient(b *testing.B) *Client {
	b.Helper()
	srv := redistest.Start(b)
	c, err := NewClient(Config{Conn: conn.Config{Addr: srv.Addr()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func benchParallelNames(b *testing.B, body func(name string)) {
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		name := "bench:" + strconv.FormatInt(seq.Add(1), 10)
		for pb.Next() {
			body(name)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func BenchmarkFamilyFencedLockUnlock(b *testing.B) {
	c := benchFamilyClient(b)
	ctx := context.Background()
	benchParallelNames(b, func(name string) {
		l := c.FencedLock(name)
		held, _, err := l.LockLease(ctx, 30e9)
		if err != nil {
			b.Error(err) // RunParallel bodies must not call Fatal
			return
		}
		if err := l.Unlock(held); err != nil {
			b.Error(err) // RunParallel bodies must not call Fatal
		}
	})
}

func BenchmarkFamilyFairLockUnlock(b *testing.B) {
	c := benchFamilyClient(b)
	ctx := context.Background()
	benchParallelNames(b, func(name string) {
		l := c.FairLock(name)
		held, err := l.LockLease(ctx, 30e9)
		if err != nil {
			b.Error(err) // RunParallel bodies must not call Fatal
			return
		}
		if err := l.Unlock(held); err != nil {
			b.Error(err) // RunParallel bodies must not call Fatal
		}
	})
}

func BenchmarkFamilySemaphoreAcquireRelease(b *testing.B) {
	c := benchFamilyClient(b)
	ctx := context.Background()
	benchParallelNames(b, func(name string) {
		s := c.Semaphore(name)
		if ok, err := s.TryAcquire(ctx, 1, 0); err != nil {
			b.Error(err) // RunParallel bodies must not call Fatal
			return
		} else if !ok {
			s.TrySetPermits(ctx, 1)
			return
		}
		if err := s.Release(ctx, 1); err != nil {
			b.Error(err) // RunParallel bodies must not call Fatal
		}
	})
}

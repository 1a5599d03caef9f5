//go:build unix

package timer

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	// Benchmark comparison only: it deadlocks under churn (RussellLuo/timingwheel issue #53), so it never appears
	// outside this file, and every benchmark using it runs under guarded.
	"github.com/RussellLuo/timingwheel"
)

// Benchmarks compare this wheel with time.AfterFunc (the runtime's timer heap) and RussellLuo/timingwheel (the
// design card's reference) in the same run. Run them with:
//
//	go test -run '^$' -bench . -benchtime 1x ./timer      (the 1M and lateness ones, once each)
//	go test -run '^$' -bench NewTimeoutCancel ./timer
//
// All three wheels use a 10 ms tick where they have one (RussellLuo's wheel size 1024 like ours).

const (
	benchTick  = 10 * time.Millisecond
	benchWheel = 1024
)

// guarded runs body on its own goroutine and waits for it, failing the benchmark with a goroutine dump if body's
// progress counter stays still for 20 s: a deadlocked wheel (RussellLuo's issue #53) fails the run instead of
// hanging it. body must not call b.Fatal (it is not on the benchmark goroutine); b.Error is fine.
func guarded(b *testing.B, body func(progress *atomic.Int64)) {
	b.Helper()
	var progress atomic.Int64
	done := make(chan struct{})
	go func() { // owned by the benchmark; exits when body returns; awaited (with a stall bound) below
		defer close(done)
		body(&progress)
	}()
	awaitProgress(b, b.Name(), done, progress.Load, 20*time.Second)
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

var noopTask = TaskFunc(func(*Timeout) {})

func noopFunc() {}

// BenchmarkNewTimeoutCancel measures scheduling a timeout and cancelling it (the response-timeout pattern: almost
// every timeout is cancelled by its reply), from one goroutine and from all.
func BenchmarkNewTimeoutCancel(b *testing.B) {
	b.Run("impl=locksmith", func(b *testing.B) {
		tm := New(Config{Tick: benchTick, WheelSize: benchWheel})
		defer tm.Stop()
		b.ReportAllocs()
		guarded(b, func(p *atomic.Int64) {
			for range b.N {
				to, err := tm.NewTimeout(noopTask, 3*time.Second)
				if err != nil {
					b.Error(err)
					return
				}
				to.Cancel()
				p.Add(1)
			}
		})
	})
	b.Run("impl=time.AfterFunc", func(b *testing.B) {
		b.ReportAllocs()
		guarded(b, func(p *atomic.Int64) {
			for range b.N {
				time.AfterFunc(3*time.Second, noopFunc).Stop()
				p.Add(1)
			}
		})
	})
	b.Run("impl=RussellLuo", func(b *testing.B) {
		tw := timingwheel.NewTimingWheel(benchTick, benchWheel)
		tw.Start()
		b.ReportAllocs()
		guarded(b, func(p *atomic.Int64) {
			defer tw.Stop()
			for range b.N {
				tw.AfterFunc(3*time.Second, noopFunc).Stop()
				p.Add(1)
			}
		})
	})
}

// BenchmarkNewTimeoutCancelParallel is BenchmarkNewTimeoutCancel from GOMAXPROCS goroutines at once.
func BenchmarkNewTimeoutCancelParallel(b *testing.B) {
	b.Run("impl=locksmith", func(b *testing.B) {
		tm := New(Config{Tick: benchTick, WheelSize: benchWheel})
		defer tm.Stop()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if to, err := tm.NewTimeout(noopTask, 3*time.Second); err == nil {
					to.Cancel()
				}
			}
		})
	})
	b.Run("impl=time.AfterFunc", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				time.AfterFunc(3*time.Second, noopFunc).Stop()
			}
		})
	})
	b.Run("impl=RussellLuo", func(b *testing.B) {
		tw := timingwheel.NewTimingWheel(benchTick, benchWheel)
		tw.Start()
		b.ReportAllocs()
		guarded(b, func(p *atomic.Int64) {
			defer tw.Stop()
			var wg sync.WaitGroup
			per := b.N/runtime.GOMAXPROCS(0) + 1
			for range runtime.GOMAXPROCS(0) {
				wg.Add(1)
				go func() { // owned by this benchmark; exits after per iterations; awaited by wg
					defer wg.Done()
					for range per {
						tw.AfterFunc(3*time.Second, noopFunc).Stop()
						p.Add(1)
					}
				}()
			}
			wg.Wait()
		})
	})
}

// benchHold is how long a benchmark that measures over a window keeps its load: d, or a tenth of it with -short,
// for a run that checks that the benchmarks still work (make test runs every benchmark once so), not one whose
// figures are read.
func benchHold(d time.Duration) time.Duration {
	if testing.Short() {
		return d / 10
	}
	return d
}

// BenchmarkPending1M holds 1,000,000 pending timeouts (one shared task; delays spread evenly over one rotation,
// an hour away, so that every bucket holds about a thousand timeouts not yet due: the wheel's worst case) and
// reports the heap they take (after GC), the cost of scheduling them, the CPU the timer uses while they are pending
// (over 5 s; benchHold), and the cost of cancelling them all.
func BenchmarkPending1M(b *testing.B) {
	const n = 1_000_000
	hold := benchHold(5 * time.Second)
	delay := func(i int) time.Duration { return time.Hour + time.Duration(i)*(benchTick*benchWheel/n) }
	report := func(b *testing.B, heap uint64, sched, cpu, cancel time.Duration) {
		b.ReportMetric(float64(heap)/n, "heap-B/timeout")
		b.ReportMetric(float64(sched.Nanoseconds())/n, "ns/schedule")
		b.ReportMetric(100*cpu.Seconds()/hold.Seconds(), "cpu-%-while-pending")
		b.ReportMetric(float64(cancel.Nanoseconds())/n, "ns/cancel")
	}
	b.Run("impl=locksmith", func(b *testing.B) {
		guarded(b, func(*atomic.Int64) {
			for range b.N {
				tm := New(Config{Tick: benchTick, WheelSize: benchWheel})
				tos := make([]*Timeout, n)
				base := heapInUse()
				start := time.Now()
				for i := range tos {
					tos[i], _ = tm.NewTimeout(noopTask, delay(i))
				}
				sched := time.Since(start)
				time.Sleep(3 * benchTick) // let the worker move them from the queue into the wheel
				heap := heapInUse() - base
				cpu0 := cpuTime()
				time.Sleep(hold)
				cpu := cpuTime() - cpu0
				start = time.Now()
				for _, to := range tos {
					to.Cancel()
				}
				cancel := time.Since(start)
				tm.Stop()
				report(b, heap, sched, cpu, cancel)
			}
		})
	})
	b.Run("impl=time.AfterFunc", func(b *testing.B) {
		guarded(b, func(*atomic.Int64) {
			for range b.N {
				ts := make([]*time.Timer, n)
				base := heapInUse()
				start := time.Now()
				for i := range ts {
					ts[i] = time.AfterFunc(delay(i), noopFunc)
				}
				sched := time.Since(start)
				heap := heapInUse() - base
				cpu0 := cpuTime()
				time.Sleep(hold)
				cpu := cpuTime() - cpu0
				start = time.Now()
				for _, t := range ts {
					t.Stop()
				}
				report(b, heap, sched, cpu, time.Since(start))
			}
		})
	})
	b.Run("impl=RussellLuo", func(b *testing.B) {
		guarded(b, func(p *atomic.Int64) {
			for range b.N {
				tw := timingwheel.NewTimingWheel(benchTick, benchWheel)
				tw.Start()
				ts := make([]*timingwheel.Timer, n)
				base := heapInUse()
				start := time.Now()
				for i := range ts {
					ts[i] = tw.AfterFunc(delay(i), noopFunc)
					if i%1024 == 0 {
						p.Add(1)
					}
				}
				sched := time.Since(start)
				heap := heapInUse() - base
				cpu0 := cpuTime()
				time.Sleep(hold)
				cpu := cpuTime() - cpu0
				start = time.Now()
				for i, t := range ts {
					t.Stop()
					if i%1024 == 0 {
						p.Add(1)
					}
				}
				cancel := time.Since(start)
				tw.Stop()
				report(b, heap, sched, cpu, cancel)
			}
		})
	})
}

// rearmRun is the re-arm (watchdog) pattern for one implementation: chains that re-schedule themselves every
// period from inside their callback, for hold. It reports lateness percentiles and the CPU per run.
type rearmRun struct {
	period time.Duration
	mu     sync.Mutex // guards late: callbacks of time.AfterFunc and RussellLuo run on many goroutines
	late   *latencyHist
	runs   atomic.Int64
	early  atomic.Int64 // runs before the period had elapsed
	stop   atomic.Bool
}

func newRearmRun(period time.Duration) *rearmRun {
	return &rearmRun{period: period, late: newLatencyHist()}
}

// record notes one run of a chain armed at armed (nanoseconds of time.Since(origin)).
func (r *rearmRun) record(origin time.Time, armed int64) {
	late := int64(time.Since(origin)) - armed - int64(r.period)
	if late < 0 {
		r.early.Add(1)
	}
	r.mu.Lock()
	r.late.RecordValue(max(late/1000, 0))
	r.mu.Unlock()
	r.runs.Add(1)
}

func (r *rearmRun) report(b *testing.B, cpu, hold time.Duration) {
	// Callbacks of time.AfterFunc and RussellLuo that were already running when the chains stopped may still
	// record: read the histogram under the same mutex.
	r.mu.Lock()
	defer r.mu.Unlock()
	ms := func(q float64) float64 { return float64(r.late.ValueAtQuantile(q)) / 1000 }
	b.ReportMetric(ms(50), "late-p50-ms")
	b.ReportMetric(ms(99), "late-p99-ms")
	b.ReportMetric(ms(99.9), "late-p999-ms")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(r.runs.Load(), 1)), "cpu-ns/run")
	b.ReportMetric(float64(r.runs.Load())/hold.Seconds(), "runs/s")
	b.ReportMetric(100*float64(r.early.Load())/float64(max(r.runs.Load(), 1)), "early-%")
}

type rearmChain struct {
	r      *rearmRun
	tm     *Timer
	origin time.Time
	armed  atomic.Int64
}

func (c *rearmChain) Run(*Timeout) {
	c.r.record(c.origin, c.armed.Load())
	if c.r.stop.Load() {
		return
	}
	c.armed.Store(int64(time.Since(c.origin)))
	_, _ = c.tm.NewTimeout(c, c.r.period)
}

// BenchmarkRearm runs 10,000 chains re-arming every 100 ms for 3 s per iteration (about 300,000 runs; benchHold).
func BenchmarkRearm(b *testing.B) {
	const chains, period = 10_000, 100 * time.Millisecond
	hold := benchHold(3 * time.Second)
	b.Run("impl=locksmith", func(b *testing.B) {
		guarded(b, func(p *atomic.Int64) {
			for range b.N {
				r := newRearmRun(period)
				tm := New(Config{Tick: benchTick, WheelSize: benchWheel})
				origin := time.Now()
				cpu0 := cpuTime()
				for i := range chains {
					c := &rearmChain{r: r, tm: tm, origin: origin}
					c.armed.Store(int64(time.Since(origin)) - int64(period*time.Duration(chains-i)/chains))
					_, _ = tm.NewTimeout(c, period*time.Duration(i)/chains)
				}
				time.Sleep(hold)
				r.stop.Store(true)
				cpu := cpuTime() - cpu0
				tm.Stop()
				p.Add(1)
				r.report(b, cpu, hold)
			}
		})
	})
	b.Run("impl=time.AfterFunc", func(b *testing.B) {
		guarded(b, func(p *atomic.Int64) {
			for range b.N {
				r := newRearmRun(period)
				origin := time.Now()
				cpu0 := cpuTime()
				timers := make([]*time.Timer, chains)
				var mu sync.Mutex // guards timers against the first callbacks while the loop still fills it
				mu.Lock()
				for i := range chains {
					var armed atomic.Int64
					armed.Store(int64(time.Since(origin)) - int64(period*time.Duration(chains-i)/chains))
					timers[i] = time.AfterFunc(period*time.Duration(i)/chains, func() {
						r.record(origin, armed.Load())
						if r.stop.Load() {
							return
						}
						armed.Store(int64(time.Since(origin)))
						mu.Lock()
						t := timers[i]
						mu.Unlock()
						t.Reset(period)
					})
				}
				mu.Unlock()
				time.Sleep(hold)
				r.stop.Store(true)
				cpu := cpuTime() - cpu0
				mu.Lock()
				for _, t := range timers {
					t.Stop()
				}
				mu.Unlock()
				p.Add(1)
				r.report(b, cpu, hold)
			}
		})
	})
	b.Run("impl=RussellLuo", func(b *testing.B) {
		guarded(b, func(p *atomic.Int64) {
			for range b.N {
				r := newRearmRun(period)
				tw := timingwheel.NewTimingWheel(benchTick, benchWheel)
				tw.Start()
				origin := time.Now()
				cpu0 := cpuTime()
				for i := range chains {
					var armed atomic.Int64
					armed.Store(int64(time.Since(origin)) - int64(period*time.Duration(chains-i)/chains))
					var f func()
					f = func() {
						r.record(origin, armed.Load())
						p.Add(1)
						if r.stop.Load() {
							return
						}
						armed.Store(int64(time.Since(origin)))
						tw.AfterFunc(period, f)
					}
					tw.AfterFunc(period*time.Duration(i)/chains, f)
				}
				time.Sleep(hold)
				r.stop.Store(true)
				cpu := cpuTime() - cpu0
				tw.Stop()
				r.report(b, cpu, hold)
			}
		})
	})
}

// BenchmarkTickCPU measures what the worker costs while one timeout is pending far away, per tick duration (the
// price of a short tick), and with nothing pending (the worker parks).
func BenchmarkTickCPU(b *testing.B) {
	hold := benchHold(5 * time.Second)
	for _, tick := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond} {
		for _, pending := range []int{0, 1} {
			b.Run(fmt.Sprintf("tick=%v/pending=%d", tick, pending), func(b *testing.B) {
				for range b.N {
					tm := New(Config{Tick: tick})
					if pending > 0 {
						_, _ = tm.NewTimeout(noopTask, time.Hour)
					} else {
						to, _ := tm.NewTimeout(noopTask, 0) // start the worker, then let it park
						for !to.IsExpired() {
							time.Sleep(tick)
						}
					}
					cpu0 := cpuTime()
					time.Sleep(hold)
					cpu := cpuTime() - cpu0
					tm.Stop()
					b.ReportMetric(100*cpu.Seconds()/hold.Seconds(), "cpu-%")
				}
			})
		}
	}
}

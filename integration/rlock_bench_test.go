package integration

import (
	"context"
	"errors"
	"flag"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/proccpu"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// The plain lock's workloads (uncontended pairs, contention on few keys, many locks held under the watchdog; the
// bench command runs the same ones against other libraries) as Go benchmarks against a redis-server started by
// redistest:
//
//	go test -run '^$' -bench 'BenchmarkUncontended' -benchtime 5s ./integration
//	go test -run '^$' -bench 'BenchmarkContended' -benchtime 5s ./integration
//	go test -run '^$' -bench 'BenchmarkHeldUnderWatchdog' -benchtime 1x ./integration -args -held.locks 10000 -held.for 30s
//
// Figures are reported with b.ReportMetric; server CPU comes from INFO cpu, renewal calls from INFO commandstats,
// client CPU from getrusage. The machine is shared: compare runs made at the same time.

var (
	heldLocks    = flag.Int("held.locks", 10_000, "BenchmarkHeldUnderWatchdog: locks held")
	heldFor      = flag.Duration("held.for", 30*time.Second, "BenchmarkHeldUnderWatchdog: how long the locks are held")
	heldWatchdog = flag.Duration("held.watchdog", 3*time.Second, "BenchmarkHeldUnderWatchdog: watchdog timeout")
)

// benchClient connects a client for a benchmark.
func benchClient(b *testing.B, srv *redistest.Server, cfg rlock.Config) *rlock.Client {
	cfg.Conn.Addr = srv.Addr()
	c, err := rlock.NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// usage samples the server's and this process's CPU time.
type usage struct {
	wall                  time.Time
	server, client, total time.Duration // total: machine-wide busy time (/proc/stat)
}

// machineBusy returns the machine's busy CPU time from /proc/stat (all CPUs, idle and iowait excluded).
func machineBusy() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	var busy int64
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return time.Duration(busy) * 10 * time.Millisecond // USER_HZ = 100
}

func sampleUsage(b *testing.B, srv *redistest.Server) usage {
	info, err := srv.Info(context.Background(), "cpu")
	if err != nil {
		b.Fatal(err)
	}
	sec := func(k string) time.Duration {
		f, _ := strconv.ParseFloat(info[k], 64)
		return time.Duration(f * float64(time.Second))
	}
	client := proccpu.Used()
	return usage{wall: time.Now(), server: sec("used_cpu_user") + sec("used_cpu_sys"), client: client, total: machineBusy()}
}

// report adds the CPU figures of the window [u0, now] in cores.
func (u0 usage) report(b *testing.B, srv *redistest.Server) time.Duration {
	u1 := sampleUsage(b, srv)
	wall := u1.wall.Sub(u0.wall)
	b.ReportMetric(float64(u1.server-u0.server)/float64(wall), "server-cores")
	b.ReportMetric(float64(u1.client-u0.client)/float64(wall), "client-cores")
	// Load from other processes during the window: figures taken with more than ~0.25 here are disturbed.
	b.ReportMetric(float64((u1.total-u0.total)-(u1.server-u0.server)-(u1.client-u0.client))/float64(wall), "other-cores")
	return wall
}

// evalshaCalls returns INFO commandstats' evalsha call count.
func evalshaCalls(b *testing.B, srv *redistest.Server) int64 {
	st, err := srv.Info(context.Background(), "commandstats")
	if err != nil {
		b.Fatal(err)
	}
	for _, kv := range strings.Split(st["cmdstat_evalsha"], ",") {
		if v, ok := strings.CutPrefix(kv, "calls="); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// latencyHist keeps a benchmark's latencies in microseconds, exactly (a few million values at most: sorting them
// once for the percentiles is cheap, and the library's module needs no histogram package).
type latencyHist struct {
	us     []int64
	sorted bool
}

func newHist() *latencyHist { return &latencyHist{} }

func (h *latencyHist) RecordValue(us int64) { h.us = append(h.us, us); h.sorted = false }

func (h *latencyHist) Merge(o *latencyHist) { h.us = append(h.us, o.us...); h.sorted = false }

// ValueAtQuantile returns the smallest recorded value at or above q percent of the values (0 when empty).
func (h *latencyHist) ValueAtQuantile(q float64) int64 {
	if len(h.us) == 0 {
		return 0
	}
	if !h.sorted {
		slices.Sort(h.us)
		h.sorted = true
	}
	i := int(math.Ceil(q/100*float64(len(h.us)))) - 1
	return h.us[min(max(i, 0), len(h.us)-1)]
}

func (h *latencyHist) Max() int64 { return h.ValueAtQuantile(100) }

func reportLatency(b *testing.B, h *latencyHist, prefix string) {
	b.ReportMetric(float64(h.ValueAtQuantile(50)), prefix+"-p50-µs")
	b.ReportMetric(float64(h.ValueAtQuantile(99)), prefix+"-p99-µs")
	b.ReportMetric(float64(h.ValueAtQuantile(99.9)), prefix+"-p99.9-µs")
	b.ReportMetric(float64(h.Max()), prefix+"-max-µs")
}

// BenchmarkUncontended: G goroutines, each locking and unlocking its own key (one op = one lock+unlock pair, with
// the watchdog).
func BenchmarkUncontended(b *testing.B) {
	for _, g := range []int{1, 64, 1024} {
		b.Run("G="+strconv.Itoa(g), func(b *testing.B) {
			srv := redistest.Start(b)
			c := benchClient(b, srv, rlock.Config{})
			ctx := context.Background()
			locks := make([]*rlock.Lock, g)
			for i := range locks {
				locks[i] = c.Lock("uncontended:" + strconv.Itoa(i))
			}
			wall, all := runWorkers(b, srv, g, func(i int, h *latencyHist) bool {
				l := locks[i]
				t0 := time.Now()
				held, err := l.Lock(ctx)
				if err != nil {
					b.Error(err)
					return false
				}
				if err := l.Unlock(held); err != nil {
					b.Error(err)
					return false
				}
				h.RecordValue(time.Since(t0).Microseconds())
				return true
			})
			b.ReportMetric(float64(b.N)/wall.Seconds(), "pairs/s")
			reportLatency(b, all, "pair")
		})
	}
}

// runWorkers runs b.N operations on g goroutines (op is called with the goroutine's index and latency histogram
// until the operations run out or it reports false), waits for them, reports the CPU figures of the run and returns
// its wall time and the merged histogram.
func runWorkers(b *testing.B, srv *redistest.Server, g int, op func(i int, h *latencyHist) bool) (time.Duration, *latencyHist) {
	var next atomic.Int64
	hists := make([]*latencyHist, g)
	for i := range hists {
		hists[i] = newHist()
	}
	var wg sync.WaitGroup
	b.ReportAllocs()
	u0 := sampleUsage(b, srv)
	b.ResetTimer()
	for i := range g {
		wg.Add(1)
		go func() { // owned by the benchmark; waited for by wg
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if !op(i, hists[i]) {
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	wall := u0.report(b, srv)
	all := newHist()
	for _, h := range hists {
		all.Merge(h)
	}
	return wall, all
}

// BenchmarkContended: 64 goroutines on 1 or 16 keys (goroutine i uses key i%K), blocking acquire with the watchdog,
// no think time. The critical section increments a per-key counter without atomics and checks a holder count;
// violations counts overlaps plus lost increments. wait = from wanting the lock to holding it.
func BenchmarkContended(b *testing.B) {
	for _, keys := range []int{1, 16} {
		b.Run("keys="+strconv.Itoa(keys), func(b *testing.B) {
			const g = 64
			srv := redistest.Start(b)
			c := benchClient(b, srv, rlock.Config{})
			ctx := context.Background()
			type keyState struct {
				holders atomic.Int64
				counter int64 // incremented only under the lock
				last    int   // goroutine that held it last
				reacq   int64
				acq     int64
			}
			ks := make([]keyState, keys)
			for i := range ks {
				ks[i].last = -1
			}
			var violations atomic.Int64
			counts := make([]int64, g)
			locks := make([]*rlock.Lock, g)
			for i := range locks {
				locks[i] = c.Lock("contended:" + strconv.Itoa(i%keys))
			}
			wall, all := runWorkers(b, srv, g, func(i int, h *latencyHist) bool {
				k, l := &ks[i%keys], locks[i]
				t0 := time.Now()
				held, err := l.Lock(ctx)
				if err != nil {
					b.Error(err)
					return false
				}
				h.RecordValue(time.Since(t0).Microseconds())
				if k.holders.Add(1) != 1 {
					violations.Add(1)
				}
				k.counter++
				k.acq++
				if k.last == i {
					k.reacq++
				}
				k.last = i
				counts[i]++
				k.holders.Add(-1)
				if err := l.Unlock(held); err != nil {
					b.Error(err)
					return false
				}
				return true
			})
			var reacq, acq int64
			for i := range ks {
				if ks[i].counter != ks[i].acq {
					violations.Add(1)
				}
				reacq += ks[i].reacq
				acq += ks[i].acq
			}
			var sum, sumSq float64
			minC, maxC := counts[0], counts[0]
			for _, n := range counts {
				sum += float64(n)
				sumSq += float64(n) * float64(n)
				minC, maxC = min(minC, n), max(maxC, n)
			}
			b.ReportMetric(float64(b.N)/wall.Seconds(), "acq/s")
			reportLatency(b, all, "wait")
			b.ReportMetric(sum*sum/(g*sumSq), "jain")
			b.ReportMetric(100*float64(reacq)/float64(max(acq, 1)), "reacq-%")
			b.ReportMetric(float64(minC), "min-per-G")
			b.ReportMetric(float64(maxC), "max-per-G")
			b.ReportMetric(float64(violations.Load()), "violations")
		})
	}
}

// BenchmarkHeldUnderWatchdog: N locks held with the watchdog for a while (defaults: 10,000 locks, watchdog 3 s, 30 s).
// It reports goroutines and client heap per held lock (after a forced GC, mid-hold), the renewal EVALSHA calls
// per second the server executed during the hold, locks per renewal call, and locks lost. Run it with
// -benchtime 1x. With -short (make test checks every benchmark so) it holds them for at most a watchdog timeout:
// long enough for three renewals, not for figures to read.
func BenchmarkHeldUnderWatchdog(b *testing.B) {
	n, hold, watchdog := *heldLocks, *heldFor, *heldWatchdog
	if testing.Short() {
		hold = min(hold, watchdog)
	}
	for i := 0; i < b.N; i++ {
		srv := redistest.Start(b)
		var lost, batches, renewed atomic.Int64
		c := benchClient(b, srv, rlock.Config{
			WatchdogTimeout: watchdog,
			Conn:            conn.Config{ResponseTimeout: 10 * time.Second},
			Observer: observerFunc{
				lost: func(rlock.LostEvent) { lost.Add(1) },
				renewal: func(e rlock.RenewalEvent) {
					batches.Add(1)
					renewed.Add(int64(e.Renewed))
				},
			},
		})
		ctx := context.Background()
		helds := make([]context.Context, n)
		runtime.GC()
		var m0 runtime.MemStats
		runtime.ReadMemStats(&m0)
		g0 := runtime.NumGoroutine()

		// Acquire with 256 goroutines, each its share of the names.
		start := time.Now()
		var wg sync.WaitGroup
		const acquirers = 256
		for a := 0; a < acquirers; a++ {
			wg.Add(1)
			go func() { // owned by the benchmark; waited for by wg
				defer wg.Done()
				for j := a; j < n; j += acquirers {
					held, err := c.Lock("held:" + strconv.Itoa(j)).Lock(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					helds[j] = held
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(time.Since(start).Seconds(), "acquire-s")

		// Hold: measure mid-hold, count renewal calls over the whole hold.
		calls0, batches0, renewed0 := evalshaCalls(b, srv), batches.Load(), renewed.Load()
		u0 := sampleUsage(b, srv)
		time.Sleep(hold / 2)
		runtime.GC()
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		g1 := runtime.NumGoroutine()
		time.Sleep(hold - hold/2)
		wall := u0.report(b, srv)
		calls := evalshaCalls(b, srv) - calls0

		heap := float64(m1.HeapAlloc) - float64(m0.HeapAlloc) // helds was allocated before m0: not counted
		b.ReportMetric(heap/float64(n), "heap-B/lock")
		b.ReportMetric(float64(g1-g0), "goroutines-added")
		b.ReportMetric(float64(calls)/wall.Seconds(), "renew-calls/s")
		if nb := batches.Load() - batches0; nb > 0 {
			b.ReportMetric(float64(renewed.Load()-renewed0)/float64(nb), "locks/renew-call")
		}
		held := 0
		for _, h := range helds {
			if h != nil && h.Err() == nil {
				held++
			}
		}
		dbsize, _ := srv.DoInt(ctx, "DBSIZE")
		b.ReportMetric(float64(lost.Load()), "lost-lib")
		b.ReportMetric(float64(int64(n)-dbsize), "lost-server")
		b.ReportMetric(float64(n-held), "held-ctx-done")

		start = time.Now()
		var notHeld atomic.Int64
		for a := 0; a < acquirers; a++ {
			wg.Add(1)
			go func() { // owned by the benchmark; waited for by wg
				defer wg.Done()
				for k := a; k < n; k += acquirers {
					if err := c.Lock("held:" + strconv.Itoa(k)).Unlock(helds[k]); errors.Is(err, rlock.ErrNotHeld) {
						notHeld.Add(1) // lost before the release: counted, reported below
					} else if err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(time.Since(start).Seconds(), "release-s")
		b.ReportMetric(float64(notHeld.Load()), "lost-at-release")
		b.ReportMetric(float64(lost.Load()), "lost-lib-total")
		c.Close()
		srv.Close()
	}
}

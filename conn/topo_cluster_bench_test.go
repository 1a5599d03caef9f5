package conn_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// BenchmarkClusterVsSingle runs the EVALSHA acquire/release pairs of BenchmarkEvalPairs over keys spread across
// all slots, against a three-master cluster and against one standalone server started in the same run, one right
// after the other for each G (with -count, the pairs of runs alternate), so both see the same machine. One op = one
// pair. Besides pairs/s it reports the client's
// CPU per pair, the servers' CPU (summed over the masters for the cluster) and commands per write syscall.
//
//	go test ./conn -run '^$' -bench BenchmarkClusterVsSingle -benchtime 3s -count 3
func BenchmarkClusterVsSingle(b *testing.B) {
	srv := redistest.Start(b)
	cl := redistest.StartCluster(b)
	masters, err := cl.Masters(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	for _, g := range []int{64, 1024} {
		for _, topo := range []string{"single", "cluster"} {
			b.Run(topo+"/G="+strconv.Itoa(g), func(b *testing.B) {
				cfg, servers := conn.Config{Addr: srv.Addr()}, []*redistest.Server{srv}
				if topo == "cluster" {
					cfg, servers = conn.Config{ClusterAddrs: cl.Addrs()}, masters
				}
				c, err := conn.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				runPairs(b, c, g, servers)
			})
		}
	}
}

// runPairs runs b.N acquire/release pairs from g goroutines on keys lock:0..g-1 and reports the window's costs.
func runPairs(b *testing.B, c *conn.Client, g int, servers []*redistest.Server) {
	ctx := context.Background()
	for i := range g { // warm up: load the scripts on every node, open every connection
		key := "lock:" + strconv.Itoa(i)
		if _, err := c.Eval(ctx, benchAcquire, []string{key}, "30000", "w").Get(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Eval(ctx, benchRelease, []string{key, "{" + key + "}:ch"}, "0", "30000", "w").Get(ctx); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	var failed atomic.Value
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, srv0, w0, t0 := clientCPU(), serversCPU(b, servers), writeSyscalls(), time.Now()
	var wg sync.WaitGroup
	for i := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "lock:" + strconv.Itoa(i)
			keys := []string{key}
			relKeys := []string{key, "{" + key + "}:ch"}
			owner := "uuid:" + strconv.Itoa(i)
			for next.Add(1) <= int64(b.N) {
				if _, err := c.Eval(ctx, benchAcquire, keys, "30000", owner).Get(ctx); err != nil {
					failed.Store(err)
					return
				}
				if _, err := c.Eval(ctx, benchRelease, relKeys, "0", "30000", owner).Get(ctx); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	secs := time.Since(t0).Seconds()
	b.ReportMetric(float64(b.N)/secs, "pairs/s")
	b.ReportMetric(float64((clientCPU()-cpu0).Microseconds())/float64(b.N), "client-µs/pair")
	b.ReportMetric((serversCPU(b, servers)-srv0)/secs, "server-cores")
	if w := writeSyscalls() - w0; w > 0 {
		b.ReportMetric(float64(2*b.N)/float64(w), "cmds/write")
	}
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
}

// serversCPU sums INFO cpu over servers.
func serversCPU(b *testing.B, servers []*redistest.Server) float64 {
	var sum float64
	for _, s := range servers {
		sum += serverCPU(b, s)
	}
	return sum
}

package conn_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/proccpu"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// Redisson-style lock scripts, as the bench command's workloads run them (acquire: create-or-reenter else PTTL;
// release: not owner -> nil, decrement, delete + publish at zero).
var (
	benchAcquire = conn.NewScript(`if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`)
	benchRelease = conn.NewScript(`if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
else
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], ARGV[1])
  return 1
end`)
)

// window measures the costs of a benchmark window: client CPU (getrusage), write syscalls (/proc/self/io syscw,
// which counts every write of the process: socket writes, eventfd wake-ups), server CPU (INFO cpu), and machine-wide
// busy CPU (/proc/stat), so that "other" load from the shared machine can be reported.
type window struct {
	srv       *redistest.Server
	start     time.Time
	cpu       time.Duration
	syscw     int64
	serverCPU float64
	machine   float64
}

func startWindow(b *testing.B, srv *redistest.Server) *window {
	w := &window{srv: srv}
	w.cpu, w.syscw, w.serverCPU, w.machine = clientCPU(), writeSyscalls(), serverCPU(b, srv), machineBusy()
	w.start = time.Now()
	return w
}

// report adds the window's figures per pair (ops = pairs) and per command (cmds).
func (w *window) report(b *testing.B, pairs, cmds int) {
	elapsed := time.Since(w.start)
	cpu := clientCPU() - w.cpu
	writes := writeSyscalls() - w.syscw
	srvCPU := serverCPU(b, w.srv) - w.serverCPU
	busy := machineBusy() - w.machine
	secs := elapsed.Seconds()
	b.ReportMetric(float64(pairs)/secs, "pairs/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(pairs), "client-µs/pair")
	b.ReportMetric(srvCPU/secs, "server-cores")
	b.ReportMetric(cpu.Seconds()/secs, "client-cores")
	b.ReportMetric(busy/secs-cpu.Seconds()/secs-srvCPU/secs, "other-cores")
	if writes > 0 {
		b.ReportMetric(float64(cmds)/float64(writes), "cmds/write")
	}
}

func clientCPU() time.Duration { return proccpu.Used() }

func writeSyscalls() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func serverCPU(b *testing.B, srv *redistest.Server) float64 {
	info, err := srv.Info(context.Background(), "cpu")
	if err != nil {
		b.Fatal(err)
	}
	sys, _ := strconv.ParseFloat(info["used_cpu_sys"], 64)
	user, _ := strconv.ParseFloat(info["used_cpu_user"], 64)
	return sys + user
}

// machineBusy returns the seconds all CPUs spent busy since boot (/proc/stat).
func machineBusy() float64 {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	fields := strings.Fields(sc.Text())[1:]
	var busy int64
	for i, v := range fields {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return float64(busy) / 100 // USER_HZ
}

// benchConfig returns the client configuration of a benchmark, with overrides from the environment so that
// policies can be compared without editing code: CONN_BENCH_POOL, CONN_BENCH_LOOPS, CONN_BENCH_POLICY (eager,
// on_reply).
func benchConfig(b *testing.B, srv *redistest.Server) conn.Config {
	cfg := conn.Config{Addr: srv.Addr()}
	if v := os.Getenv("CONN_BENCH_POOL"); v != "" {
		cfg.PoolSize, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("CONN_BENCH_LOOPS"); v != "" {
		cfg.EventLoops, _ = strconv.Atoi(v)
	}
	if os.Getenv("CONN_BENCH_POLICY") == "on_reply" {
		cfg.FlushPolicy = conn.FlushOnReply
	}
	return cfg
}

// BenchmarkEvalPairs runs the uncontended lock workload through conn: G goroutines, each EVALSHA acquire then
// EVALSHA release of its own key, over one Client. One op = one pair.
//
//	go test ./conn -run '^$' -bench BenchmarkEvalPairs -benchtime 3s -count 3
func BenchmarkEvalPairs(b *testing.B) {
	srv := redistest.Start(b)
	for _, g := range []int{1, 64, 1024} {
		b.Run("G="+strconv.Itoa(g), func(b *testing.B) {
			c, err := conn.New(benchConfig(b, srv))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			// Warm up: load the scripts, grow buffers.
			if _, err := c.Eval(ctx, benchAcquire, []string{"warm"}, "30000", "w:1").Get(ctx); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Eval(ctx, benchRelease, []string{"warm", "ch:warm"}, "0", "30000", "w:1").Get(ctx); err != nil {
				b.Fatal(err)
			}

			var next atomic.Int64
			var failed atomic.Value
			b.ReportAllocs()
			b.ResetTimer()
			w := startWindow(b, srv)
			var wg sync.WaitGroup
			for i := range g {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := "lock:" + strconv.Itoa(i)
					keys := []string{key}
					relKeys := []string{key, "ch:" + key}
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
			w.report(b, b.N, 2*b.N)
			if err := failed.Load(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkRoundTripG1 compares one goroutine's sequential round trip through conn with a plain net.Conn
// write+read loop on a second connection to the same server, interleaved in rounds of 200 so that both see the
// same machine state. It reports both medians and their ratio (the requirement: conn's p50 within 1.15x net.Conn's).
//
//	go test ./conn -run '^$' -bench BenchmarkRoundTripG1 -benchtime 20000x -count 5
func BenchmarkRoundTripG1(b *testing.B) {
	srv := redistest.Start(b)
	// EVALSHA-ctx: the same with a context that can end (a connection watch and an AfterFunc per command, since the
	// one command in flight is the context's only one).
	for _, name := range []string{"PING", "EVALSHA", "EVALSHA-ctx"} {
		b.Run(name, func(b *testing.B) {
			c, err := conn.New(benchConfig(b, srv))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			raw := dialRaw(b, srv)
			defer raw.close()
			ctx := context.Background()
			if name == "EVALSHA-ctx" {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
			}
			keys := []string{"lock:g1"}
			var rawCmd []byte
			var run func() error
			switch name {
			case "PING":
				rawCmd = []byte("*1\r\n$4\r\nPING\r\n")
				run = func() error { _, err := c.Do(ctx, "PING").Get(ctx); return err }
			case "EVALSHA", "EVALSHA-ctx":
				if _, err := c.Eval(ctx, benchAcquire, keys, "30000", "g1:1").Get(ctx); err != nil {
					b.Fatal(err)
				}
				rawCmd = fmt.Appendf(nil, "*6\r\n$7\r\nEVALSHA\r\n$40\r\n%s\r\n$1\r\n1\r\n$7\r\nlock:g1\r\n$5\r\n30000\r\n$4\r\ng1:1\r\n", benchAcquire.SHA())
				run = func() error { _, err := c.Eval(ctx, benchAcquire, keys, "30000", "g1:1").Get(ctx); return err }
			}
			connLat := make([]time.Duration, 0, b.N)
			rawLat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				n := min(200, b.N-done)
				for range n {
					t0 := time.Now()
					if err := run(); err != nil {
						b.Fatal(err)
					}
					connLat = append(connLat, time.Since(t0))
				}
				for range n {
					t0 := time.Now()
					if err := raw.roundTrip(rawCmd); err != nil {
						b.Fatal(err)
					}
					rawLat = append(rawLat, time.Since(t0))
				}
				done += n
			}
			b.StopTimer()
			cp, rp := median(connLat), median(rawLat)
			b.ReportMetric(float64(cp.Nanoseconds())/1e3, "conn-p50-µs")
			b.ReportMetric(float64(rp.Nanoseconds())/1e3, "netconn-p50-µs")
			b.ReportMetric(float64(cp)/float64(rp), "ratio")
		})
	}
}

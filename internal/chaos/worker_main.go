package chaos

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// WorkerMain is the worker process's main: it parses args (flags named after WorkerConfig's fields, see
// workerFlags) and runs RunWorker until SIGTERM or SIGINT. It returns the process exit code: 0 after a clean
// stop, 1 when the worker failed, 2 for bad flags. Callers: internal/chaos/cmd/chaosworker, the chaos test binary
// (re-executed as a worker) and the soak runner (idem).
func WorkerMain(args []string, stdout, stderr io.Writer) int {
	var cfg WorkerConfig
	fs := flag.NewFlagSet("chaosworker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var locks string
	fs.IntVar(&cfg.Proc, "proc", 0, "worker index")
	fs.StringVar(&cfg.Addr, "addr", "", "redis-server or proxy host:port")
	fs.StringVar(&locks, "locks", "", "comma-separated lock names")
	fs.IntVar(&cfg.Goroutines, "g", 0, "goroutines (default 4)")
	fs.DurationVar(&cfg.Watchdog, "watchdog", 0, "rlock watchdog timeout (default 2s)")
	fs.DurationVar(&cfg.Lease, "lease", 0, "lease of the lease forms (default 1.5s)")
	fs.DurationVar(&cfg.ResponseTimeout, "rt", 0, "conn response timeout (default 500ms)")
	fs.DurationVar(&cfg.WaitBound, "wait", 0, "wait bound of acquires (default 2s)")
	fs.DurationVar(&cfg.HoldMin, "hold-min", 0, "shortest hold (default 2ms)")
	fs.DurationVar(&cfg.HoldMax, "hold-max", 0, "longest hold (default 30ms)")
	fs.DurationVar(&cfg.CheckEvery, "check", 0, "held-context check period (default 1ms)")
	fs.Float64Var(&cfg.Plain, "plain", 0, "fraction of acquires through the plain Lock")
	fs.Float64Var(&cfg.UnlockLost, "unlock-lost", 0, "fraction of lost holds released all the same")
	fs.Float64Var(&cfg.LongHolds, "long", 0, "fraction of long holds (half the watchdog timeout to 1.5 × the longest lease)")
	fs.DurationVar(&cfg.Tolerance, "tolerance", 0, "hung-waiter tolerance (default 1s)")
	fs.DurationVar(&cfg.StatEvery, "stat", 0, "stat record period (default 2s)")
	fs.StringVar(&cfg.Forms, "forms", "", "acquire forms: comma-separated lock,try,trylease,locklease,async,nowait (default all)")
	fs.StringVar(&cfg.LogPath, "log", "", "log file")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if locks != "" {
		cfg.Locks = strings.Split(locks, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := RunWorker(ctx, cfg, stdout); err != nil {
		fmt.Fprintln(stderr, "chaosworker:", err)
		return 1
	}
	return 0
}

func pid() int { return os.Getpid() }

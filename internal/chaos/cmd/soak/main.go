// Command soak is the long chaos run (`make soak`): worker processes acquire fenced and plain
// locks through two fault proxies in front of a real redis-server for -duration (10 minutes by default) while every
// kind of fault is injected in turn, then the checker verifies the log (no overlap of believed holds, tokens in
// grant order, no waiter past its bound, every worker stopped cleanly) and the resources are checked for growth
// (workers' goroutines and heap, the server's keys, channels and clients, nothing left at the end).
//
//	go run ./internal/chaos/cmd/soak -duration 10m
//
// It prints the report and exits 1 if a promise was broken or something grew, 2 if the run could not be carried
// out. The workers are this same binary, re-executed with "worker" as the first argument. It needs redis-server in
// PATH (make deps).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/locksmith-go/locksmith/internal/chaos"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		os.Exit(chaos.WorkerMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(run())
}

func run() int {
	var cfg chaos.RunConfig
	var faults, keep string
	flag.DurationVar(&cfg.Duration, "duration", 10*time.Minute, "how long the workers run")
	flag.IntVar(&cfg.Workers, "workers", 6, "worker processes (half behind each proxy)")
	flag.IntVar(&cfg.Goroutines, "g", 3, "goroutines per worker")
	flag.IntVar(&cfg.Locks, "locks", 4, "lock names")
	flag.DurationVar(&cfg.FaultEvery, "fault-every", 8*time.Second, "one fault every")
	flag.StringVar(&faults, "faults", "all", "comma-separated fault kinds, or all")
	flag.StringVar(&keep, "dir", "", "directory for the logs (default: a temporary one, removed unless the run fails)")
	flag.Uint64Var(&cfg.Seed, "seed", uint64(time.Now().UnixNano()), "random seed")
	recheck := flag.String("check", "", "check the kept run in this directory again (no run) and list every violation")
	flag.Parse()
	if *recheck != "" {
		in, err := chaos.ReadDir(*recheck)
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			return 2
		}
		rep := chaos.Check(in, cfg.Check)
		fmt.Print(rep)
		for i, v := range rep.Violations {
			if i >= 20 {
				fmt.Println("  " + v.String())
			}
		}
		if !rep.OK() {
			return 1
		}
		return 0
	}

	if faults == "all" {
		cfg.Faults = chaos.AllFaultKinds
	} else {
		for _, k := range strings.Split(faults, ",") {
			cfg.Faults = append(cfg.Faults, chaos.FaultKind(k))
		}
	}
	cfg.Persistence = true // FaultRestartPersist needs the AOF; the data-loss restarts delete it first
	cfg.Warmup = 5 * time.Second
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	cfg.Command = func(args []string) *exec.Cmd { return exec.Command(self, append([]string{"worker"}, args...)...) }
	cfg.Dir = keep
	if cfg.Dir == "" {
		if cfg.Dir, err = os.MkdirTemp("", "locksmith-soak-"); err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			return 2
		}
	} else if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	cfg.Logf = func(format string, args ...any) {
		fmt.Printf("%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	fmt.Printf("soak: %v, %d workers × %d goroutines, %d locks, faults %v every %v, seed %d, logs in %s\n",
		cfg.Duration, cfg.Workers, cfg.Goroutines, cfg.Locks, cfg.Faults, cfg.FaultEvery, cfg.Seed, cfg.Dir)
	res, err := chaos.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	flat := chaos.Flatness(res)
	fmt.Printf("\nchecker (run of %v):\n%s\nresources:\n%s", res.RunDuration().Round(time.Second), res.Report, flat)
	if !res.Report.OK() || !flat.OK() {
		fmt.Printf("\nFAIL: logs kept in %s (worker-*.log, faults.json)\n", cfg.Dir)
		return 1
	}
	if keep == "" {
		os.RemoveAll(cfg.Dir)
	} else {
		fmt.Printf("logs in %s\n", filepath.Clean(cfg.Dir))
	}
	fmt.Println("\nPASS")
	return 0
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "case" {
		os.Exit(workload.CaseMain(os.Args[2:], oursFactories(), os.Stdin, os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the orchestrator's flags, resolved.
type options struct {
	addr        string
	workloads   []string
	libs        []string
	duration    time.Duration
	warmup      time.Duration
	quick       bool
	jsonPath    string
	htmlPath    string
	mdPath      string
	fromPath    string
	n           int
	hold        time.Duration
	ttl         time.Duration
	lease       time.Duration
	w1G         []int
	procs       []int // 0 = Go's default
	w2G         int
	w2Keys      []int
	w4G         []int
	w2x         []shape
	w4x         []shape
	csHold      time.Duration
	repeat      int
	seed        int64
	dryRun      bool
	variants    bool
	w5Keys      []int
	ceiling     bool
	ceilingDur  time.Duration
	quietMax    time.Duration
	otherMax    float64
	reruns      int
	peersBin    string
	peersDir    string
	logDir      string
	traceDir    string
	verbose     bool
	progressBar string // auto, on, off
}

const usageText = `usage: go run ./bench [flags]

Runs the lock workloads for locksmith ("ours") and the peer libraries, each
case in its own process, against an embedded redis-server (or -addr), next to
the server's own ceiling (each library's own lock commands, pipelined pairs),
and prints a table; -json and -html write the report.

Workloads: w1 uncontended pairs (G = 1, 64, 1024), w2 contended (64
goroutines on 1 and 16 keys), w3 N watchdog-held locks, w4 hand-off latency
(G = 2, 16 on one key), w5 async (one goroutine, 1024 keys in flight), raw
EVALSHA acquire+release pairs on bare transports (ours-conn, rueidis, goredis);
w2x and w4x are w2 and w4 with the contenders spread over processes, each its
own client (-w2x, -w4x: PxG or PxG/K, e.g. 8x8,64x1,8x8/16).

Libraries: ours, redsync, redislock, rueidislock, rueidis (raw rueidis EVALSHA
of the same scripts), goredis (the same on go-redis), ours-conn (the same on
locksmith's conn package), fifo (a reference, not a lock: first come, first
served on a list beside the key, no expiry); variants: ours:lease (fixed lease
instead of the watchdog), redsync:1ms, redislock:1ms, rueidislock:loop,
rueidislock:20ms (its default TryNextAfter), rueidis:flush (MaxFlushDelay
20 µs); -variants adds some next to their defaults, and fifo next to ours in
w2x.

Flags:
`

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	var o options
	var workloads, libs, w1G, procs, w2Keys, w4G, w5Keys, w2x, w4x string
	fs.StringVar(&o.addr, "addr", "", "redis-server host:port (default: start an embedded one on loopback)")
	fs.StringVar(&workloads, "workloads", "w1,w2,w2x,w3,w4,w4x,w5", "workloads to run (also: raw)")
	fs.StringVar(&libs, "libs", "ours,redsync,redislock,rueidislock,rueidis,goredis", "libraries to run (raw runs the transports among them; ours brings ours-conn)")
	fs.DurationVar(&o.duration, "duration", 2*time.Second, "measurement window of every run of a case")
	fs.DurationVar(&o.warmup, "warmup", 500*time.Millisecond, "warm-up before each window")
	fs.BoolVar(&o.quick, "quick", false, "smoke run: one run per case, short windows, fewer configurations, N=1000 (a few seconds per library)")
	fs.IntVar(&o.repeat, "repeat", 5, "runs of every case, interleaved in a random order across libraries; tables show the median and the min–max spread")
	fs.Int64Var(&o.seed, "seed", 0, "seed of the run order (0: from the clock; the seed used is printed)")
	fs.BoolVar(&o.variants, "variants", true, "run the peers' variants next to their defaults where they tell something (rueidis:flush in W1, redsync:1ms in W2/W2x/W4/W4x, rueidislock:20ms in W2)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the cases, the number of runs and the estimated run time, and exit")
	fs.StringVar(&o.jsonPath, "json", "", "write the JSON report to this path")
	fs.StringVar(&o.htmlPath, "html", "", "write the HTML report to this path")
	fs.StringVar(&o.mdPath, "markdown", "", "write the tables as Markdown to this path")
	fs.StringVar(&o.fromPath, "from", "", "render an existing JSON report (table, -html, -markdown) instead of running")
	fs.IntVar(&o.n, "n", 10000, "W3: number of held locks (1000000 works for ours)")
	fs.DurationVar(&o.hold, "hold", 6*time.Second, "W3: how long the locks are held")
	fs.DurationVar(&o.ttl, "ttl", 3*time.Second, "W3: watchdog lease (key TTL)")
	fs.DurationVar(&o.lease, "lease", 10*time.Second, "fixed lease for libraries without a watchdog (W1, W2, W4)")
	fs.StringVar(&w1G, "g", "1,64,1024", "W1/raw: goroutine counts")
	fs.StringVar(&procs, "procs", "0", "W1, W2: GOMAXPROCS values every library runs with, 0 = Go's default; auto = 0, "+
		"and NumCPU-1 when the server is local (the client leaves the server a core)")
	fs.IntVar(&o.w2G, "w2-g", 64, "W2: goroutines")
	fs.StringVar(&w2Keys, "w2-keys", "1,16", "W2: key counts")
	fs.StringVar(&w4G, "w4-g", "16", "W4: goroutine counts (one key)")
	fs.StringVar(&w5Keys, "w5-keys", "1024", "W5: keys in flight")
	fs.StringVar(&w2x, "w2x", "8x8,64x1,8x8/16", "W2x: contenders spread over processes, PxG[/K]: P processes of G goroutines on K keys (default 1)")
	fs.StringVar(&w4x, "w4x", "8x8", "W4x: contenders spread over processes, PxG (one key)")
	fs.DurationVar(&o.csHold, "cs-hold", 5*time.Microsecond, "W2, W2x, W4, W4x: time a holder stays in the critical section besides the server-side checks, yielding")
	fs.BoolVar(&o.ceiling, "ceiling", true, "measure the server ceiling of every library's lock commands")
	fs.DurationVar(&o.ceilingDur, "ceiling-duration", 0, "length of each ceiling run (default: -duration)")
	fs.DurationVar(&o.quietMax, "quiet-wait", 10*time.Second, "longest wait for a quiet machine before a case")
	fs.Float64Var(&o.otherMax, "other-max", 0.25, "other processes' cores above which a case counts as disturbed and is rerun")
	fs.IntVar(&o.reruns, "reruns", 2, "reruns of a disturbed case")
	fs.StringVar(&o.peersBin, "peers-bin", "", "prebuilt peers binary (default: build bench/peers)")
	fs.StringVar(&o.peersDir, "peers-dir", "", "directory of the peers command (default: bench/peers of this checkout)")
	fs.StringVar(&o.logDir, "log-dir", "", "keep each case process's stderr in this directory")
	fs.StringVar(&o.traceDir, "trace-dir", "", "write a runtime trace of every case process into this directory (go tool trace; "+
		"W2x/W4x: one per process, on one clock)")
	fs.BoolVar(&o.verbose, "v", false, "log every case and sample")
	fs.StringVar(&o.progressBar, "progress", "auto", "progress bar: auto (on a terminal, not in CI), on, off")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q (the case subcommand is internal)", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.quick {
		// A smoke run: every workload, fewer configurations, short windows.
		def := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		def("repeat", func() { o.repeat = 1 })
		def("workloads", func() { workloads += ",raw" })
		def("duration", func() { o.duration = 400 * time.Millisecond })
		def("warmup", func() { o.warmup = 100 * time.Millisecond })
		def("g", func() { w1G = "1,64" })
		def("w4-g", func() { w4G = "2" })
		def("w2x", func() { w2x = "4x2,4x2/4" })
		def("w4x", func() { w4x = "4x2" })
		def("w5-keys", func() { w5Keys = "256" })
		def("n", func() { o.n = 1000 })
		def("hold", func() { o.hold = 1500 * time.Millisecond })
		def("ttl", func() { o.ttl = time.Second })
		def("quiet-wait", func() { o.quietMax = time.Second })
		def("reruns", func() { o.reruns = 0 })
	}
	if o.ceilingDur <= 0 {
		o.ceilingDur = o.duration
	}
	var err error
	o.workloads = splitList(workloads)
	for _, w := range o.workloads {
		switch w {
		case workload.UncontendedPairs, workload.ContendedKeys, workload.HeldMany, workload.Handoff, workload.AsyncPairs, workload.Raw, workload.ContendedKeysSpread, workload.HandoffSpread:
		default:
			return o, fmt.Errorf("-workloads: unknown workload %q (want w1..w5, w2x, w4x, raw)", w)
		}
	}
	o.libs = splitList(libs)
	if len(o.libs) == 0 {
		return o, errors.New("-libs: no library")
	}
	for _, l := range o.libs {
		if !knownLibrary(l) {
			return o, fmt.Errorf("-libs: unknown library %q", l)
		}
	}
	if o.w1G, err = intList("g", w1G); err != nil {
		return o, err
	}
	if o.procs, err = procsList(procs, o.addr, runtime.NumCPU()); err != nil {
		return o, err
	}
	if o.w2Keys, err = intList("w2-keys", w2Keys); err != nil {
		return o, err
	}
	if o.w4G, err = intList("w4-g", w4G); err != nil {
		return o, err
	}
	if o.w5Keys, err = intList("w5-keys", w5Keys); err != nil {
		return o, err
	}
	if o.w2x, err = shapeList("w2x", w2x); err != nil {
		return o, err
	}
	if o.w4x, err = shapeList("w4x", w4x); err != nil {
		return o, err
	}
	for _, sh := range o.w4x {
		if sh.keys != 1 {
			return o, fmt.Errorf("-w4x: %s: W4 runs on one key", sh)
		}
		if sh.procs*sh.g < 2 {
			return o, fmt.Errorf("-w4x: %s: a hand-off needs at least 2 goroutines", sh)
		}
	}
	if o.csHold < 0 {
		return o, errors.New("-cs-hold must not be negative")
	}
	for _, g := range o.w4G {
		if g < 2 {
			return o, fmt.Errorf("-w4-g: a hand-off needs at least 2 goroutines, got %d", g)
		}
	}
	if o.repeat < 1 {
		return o, fmt.Errorf("-repeat: want at least 1, got %d", o.repeat)
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano()
	}
	if o.duration <= 0 || o.n <= 0 || o.hold <= 0 || o.ttl <= 0 || o.lease <= 0 || o.w2G <= 0 {
		return o, errors.New("-duration, -n, -hold, -ttl, -lease and -w2-g must be positive")
	}
	switch o.progressBar {
	case "auto", "on", "off":
	default:
		return o, fmt.Errorf("-progress: want auto, on or off, got %q", o.progressBar)
	}
	return o, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func intList(name, s string) ([]int, error) {
	var out []int
	for _, p := range splitList(s) {
		var n int
		if _, err := fmt.Sscan(p, &n); err != nil || n <= 0 {
			return nil, fmt.Errorf("-%s: %q is not a positive integer", name, p)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-%s: empty list", name)
	}
	return out, nil
}

// shape is one configuration of a spread case: procs processes of g
// goroutines each on keys keys.
type shape struct{ procs, g, keys int }

func (s shape) String() string {
	if s.keys == 1 {
		return fmt.Sprintf("%dx%d", s.procs, s.g)
	}
	return fmt.Sprintf("%dx%d/%d", s.procs, s.g, s.keys)
}

// shapeList parses "PxG[/K],..." (P processes × G goroutines on K keys,
// default 1 key).
func shapeList(name, s string) ([]shape, error) {
	var out []shape
	for _, p := range splitList(s) {
		sh := shape{keys: 1}
		pg, k, hasK := strings.Cut(p, "/")
		ps, gs, ok := strings.Cut(strings.ToLower(pg), "x")
		var err error
		if ok {
			if sh.procs, err = strconv.Atoi(ps); err == nil {
				sh.g, err = strconv.Atoi(gs)
			}
		}
		if err == nil && hasK {
			sh.keys, err = strconv.Atoi(k)
		}
		if !ok || err != nil || sh.procs < 1 || sh.g < 1 || sh.keys < 1 {
			return nil, fmt.Errorf("-%s: %q is not PxG or PxG/K with positive integers (e.g. 8x8 or 8x8/16)", name, p)
		}
		out = append(out, sh)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-%s: empty list", name)
	}
	return out, nil
}

// procsList resolves -procs (W1 and W2): "auto" is Go's default (0) and, when the
// server shares this machine (embedded or on loopback) and it has more than
// one CPU, NumCPU-1: the client then leaves the server a core of its own
// instead of competing with it for both, which is the better setting for some
// clients and the worse for others, so every library runs both.
func procsList(s, addr string, ncpu int) ([]int, error) {
	if strings.TrimSpace(s) == "auto" {
		out := []int{0}
		if ncpu > 1 && (addr == "" || isLoopback(addr)) {
			out = append(out, ncpu-1)
		}
		return out, nil
	}
	var out []int
	for _, p := range splitList(s) {
		var n int
		if _, err := fmt.Sscan(p, &n); err != nil || n < 0 {
			return nil, fmt.Errorf("-procs: %q is not auto, 0 (Go's default) or a positive GOMAXPROCS", p)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("-procs: empty list")
	}
	return out, nil
}

// knownLibrary reports whether name (with any variant) is a library this CLI
// can run, in this binary (ours) or in the peers binary.
func knownLibrary(name string) bool {
	base, variant, _ := strings.Cut(name, ":")
	switch base {
	case "ours":
		return variant == "" || variant == "lease"
	case "ours-conn", "goredis", "fifo":
		return variant == ""
	case "rueidis":
		return variant == "" || variant == "flush"
	case "redsync", "redislock":
		return variant == "" || variant == "1ms"
	case "rueidislock":
		return variant == "" || variant == "loop" || variant == "20ms"
	}
	return false
}

// inThisBinary reports whether the library runs in this binary (ours, its
// transport baseline and the fifo reference); the peers run in the peers
// binary.
func inThisBinary(lib string) bool {
	return lib == "ours" || strings.HasPrefix(lib, "ours:") || lib == "ours-conn" || lib == "fifo"
}

package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

// plan lists the cases to run, in order: workload by workload, and within a
// workload configuration by configuration with every library next to each
// other (so that drift of the machine over the run affects the comparison
// between libraries as little as possible). The libraries of this binary run
// first in each group.
// W1 and W2 run each configuration at every GOMAXPROCS of -procs.
func plan(o options) []workload.Spec {
	libs := slices.Clone(o.libs)
	slices.SortStableFunc(libs, func(a, b string) int {
		return boolInt(!inThisBinary(a)) - boolInt(!inThisBinary(b))
	})
	var cases []workload.Spec
	add := func(w, lib string, g, keys int) *workload.Spec {
		s := workload.Spec{
			Workload: w, Library: lib, Goroutines: g, Keys: keys,
			Duration: o.duration, Warmup: o.warmup, TraceDir: o.traceDir,
		}
		if w == workload.HeldMany {
			s.Hold = o.hold
			s.Warmup = 0
		}
		cases = append(cases, s)
		return &cases[len(cases)-1]
	}
	procs := o.procs
	if len(procs) == 0 {
		procs = []int{0}
	}
	for _, w := range o.workloads {
		lockLibs := libs
		if o.variants {
			lockLibs = withVariants(w, libs)
		}
		switch w {
		case workload.UncontendedPairs:
			for _, g := range o.w1G {
				for _, p := range procs {
					for _, l := range lockLibs {
						add(w, l, g, g).Procs = p
					}
				}
			}
		case workload.ContendedKeys:
			for _, k := range o.w2Keys {
				for _, p := range procs {
					for _, l := range lockLibs {
						add(w, l, o.w2G, k).Procs = p
					}
				}
			}
		case workload.ContendedKeysSpread, workload.HandoffSpread:
			shapes := o.w2x
			if w == workload.HandoffSpread {
				shapes = o.w4x
			}
			for _, sh := range shapes {
				for _, l := range lockLibs {
					s := add(w, l, sh.g, sh.keys)
					s.Processes = sh.procs
					s.CSHold = o.csHold
				}
			}
		case workload.HeldMany:
			for _, l := range lockLibs {
				add(w, l, 0, o.n)
			}
		case workload.Handoff:
			for _, g := range o.w4G {
				for _, l := range lockLibs {
					add(w, l, g, 1).CSHold = o.csHold
				}
			}
		case workload.AsyncPairs:
			for _, k := range o.w5Keys {
				for _, l := range lockLibs {
					add(w, l, 1, k)
				}
			}
		case workload.Raw:
			for _, g := range o.w1G {
				for _, l := range transports(lockLibs) {
					add(w, l, g, g)
				}
			}
		}
	}
	return cases
}

// autoVariants are the variants run next to a library's default
// configuration in the workloads where they tell something: raw rueidis with
// MaxFlushDelay where throughput is measured; redsync's 1 ms retry delay
// (fast in one process, collapsing across processes) and rueidislock's own
// 20 ms TryNextAfter (which strands waiters under contention) where
// contenders wait. Next to ours across processes runs the fifo reference:
// what a first come, first served hand-over through the server costs at
// least, the bound of a fair lock's throughput there.
var autoVariants = map[string]map[string]string{
	workload.UncontendedPairs:    {"rueidis": "rueidis:flush"},
	workload.Raw:                 {"rueidis": "rueidis:flush"},
	workload.ContendedKeys:       {"redsync": "redsync:1ms", "rueidislock": "rueidislock:20ms"},
	workload.ContendedKeysSpread: {"redsync": "redsync:1ms", "ours": "fifo"},
	workload.Handoff:             {"redsync": "redsync:1ms"},
	workload.HandoffSpread:       {"redsync": "redsync:1ms"},
}

// withVariants returns libs with the workload's auto variants right after
// their library (unless already asked for).
func withVariants(w string, libs []string) []string {
	var out []string
	for _, l := range libs {
		out = append(out, l)
		if v, ok := autoVariants[w][l]; ok && !slices.Contains(libs, v) {
			out = append(out, v)
		}
	}
	return out
}

// transports returns the raw transports the raw workload compares: ours-conn
// when ours (or ours-conn) is asked for, and rueidis and goredis when asked.
func transports(libs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range libs {
		t := ""
		switch l {
		case "ours", "ours-conn":
			t = "ours-conn"
		case "rueidis", "rueidis:flush", "goredis":
			t = l
		}
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// describe is a short label for a case ("w1 redsync G=64").
func describe(s workload.Spec) string {
	switch s.Workload {
	case workload.ContendedKeysSpread, workload.HandoffSpread:
		return fmt.Sprintf("%s %s %dx%d keys=%d", s.Workload, s.Library, s.Processes, s.Goroutines, s.Keys)
	case workload.ContendedKeys:
		if s.Procs > 0 {
			return fmt.Sprintf("%s %s G=%d keys=%d GOMAXPROCS=%d", s.Workload, s.Library, s.Goroutines, s.Keys, s.Procs)
		}
		return fmt.Sprintf("%s %s G=%d keys=%d", s.Workload, s.Library, s.Goroutines, s.Keys)
	case workload.HeldMany:
		return fmt.Sprintf("%s %s N=%d", s.Workload, s.Library, s.Keys)
	case workload.AsyncPairs:
		return fmt.Sprintf("%s %s keys=%d", s.Workload, s.Library, s.Keys)
	default:
		if s.Procs > 0 {
			return fmt.Sprintf("%s %s G=%d GOMAXPROCS=%d", s.Workload, s.Library, s.Goroutines, s.Procs)
		}
		return fmt.Sprintf("%s %s G=%d", s.Workload, s.Library, s.Goroutines)
	}
}

// schedule returns the order in which the cases run, as indexes into cases:
// repeat rounds, each running every case once; within a round the
// configurations keep the plan's order (workload by workload), and the
// libraries of each configuration run in a random order drawn from seed, so
// that no library always runs first (or right after another) and each
// library's runs of a case are spread over the whole run.
func schedule(cases []workload.Spec, repeat int, seed int64) []int {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)>>32|1))
	var groups [][]int
	for i, c := range cases {
		if n := len(groups); n > 0 && sameConfig(cases[groups[n-1][0]], c) {
			groups[n-1] = append(groups[n-1], i)
			continue
		}
		groups = append(groups, []int{i})
	}
	out := make([]int, 0, repeat*len(cases))
	for range repeat {
		for _, g := range groups {
			g = slices.Clone(g)
			rng.Shuffle(len(g), func(a, b int) { g[a], g[b] = g[b], g[a] })
			out = append(out, g...)
		}
	}
	return out
}

// sameConfig reports whether two cases differ by their library only.
func sameConfig(a, b workload.Spec) bool {
	a.Library, b.Library = "", ""
	return a == b
}

// caseOverhead is what a case costs besides its warm-up and window on this
// kind of machine: the look for a quiet machine (at least 250 ms), starting
// the process and the library, the teardown and the flush.
const caseOverhead = 400 * time.Millisecond

// estimate is how long running cases repeat times should take, from their
// phases plus the overhead of each; spread cases add each process's start.
// W3 adds its acquisitions and releases (a few seconds at the default N).
func estimate(cases []workload.Spec, repeat int) time.Duration {
	var d time.Duration
	for _, c := range cases {
		if !applicable(c) {
			d += caseOverhead // the process starts, finds the feature missing and reports n/a
			continue
		}
		d += c.Warmup + c.Duration + c.Hold + caseOverhead
		if c.Processes > 1 {
			d += time.Duration(c.Processes) * 40 * time.Millisecond // 64 processes: about 2.5 s
		}
		if c.Workload == workload.HeldMany {
			d += time.Duration(c.Keys/4000) * time.Second // acquire and release N locks
		}
	}
	return d * time.Duration(repeat)
}

// applicable reports whether the case's library has what the workload needs,
// as far as the orchestrator knows (the case process has the last word): only
// ours has an async API (W5); the raw baselines have no watchdog (W3).
func applicable(c workload.Spec) bool {
	base, _, _ := strings.Cut(c.Library, ":")
	switch c.Workload {
	case workload.AsyncPairs:
		return base == "ours"
	case workload.HeldMany:
		return base != "rueidis" && base != "goredis" && base != "ours-conn"
	}
	return true
}

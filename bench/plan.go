package main

import (
	"fmt"
	"slices"

	"github.com/locksmith-go/locksmith/bench/workload"
)

// plan lists the cases to run, in order: workload by workload, and within a
// workload configuration by configuration with every library next to each
// other (so that drift of the machine over the run affects the comparison
// between libraries as little as possible). ours runs first in each group.
// W1 and W2 run each configuration at every GOMAXPROCS of -procs.
func plan(o options) []workload.Spec {
	libs := slices.Clone(o.libs)
	slices.SortStableFunc(libs, func(a, b string) int { return boolInt(!isOurs(a)) - boolInt(!isOurs(b)) })
	lockLibs := slices.Clone(libs) // libraries with lock semantics (everything but ours-conn unless asked)
	var cases []workload.Spec
	add := func(w, lib string, g, keys int) *workload.Spec {
		s := workload.Spec{
			Workload: w, Library: lib, Goroutines: g, Keys: keys,
			Duration: o.duration, Warmup: o.warmup,
		}
		if w == workload.W3 {
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
		switch w {
		case workload.W1:
			for _, g := range o.w1G {
				for _, p := range procs {
					for _, l := range lockLibs {
						add(w, l, g, g).Procs = p
					}
				}
			}
		case workload.W2:
			for _, k := range o.w2Keys {
				for _, p := range procs {
					for _, l := range lockLibs {
						add(w, l, o.w2G, k).Procs = p
					}
				}
			}
		case workload.W3:
			for _, l := range lockLibs {
				add(w, l, 0, o.n)
			}
		case workload.W4:
			for _, g := range o.w4G {
				for _, l := range lockLibs {
					add(w, l, g, 1)
				}
			}
		case workload.W5:
			for _, k := range o.w5Keys {
				for _, l := range lockLibs {
					add(w, l, 1, k)
				}
			}
		case workload.Raw:
			for _, g := range o.w1G {
				for _, l := range transports(libs) {
					add(w, l, g, g)
				}
			}
		}
	}
	return cases
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
		case "rueidis", "goredis":
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
	case workload.W2:
		if s.Procs > 0 {
			return fmt.Sprintf("%s %s G=%d keys=%d GOMAXPROCS=%d", s.Workload, s.Library, s.Goroutines, s.Keys, s.Procs)
		}
		return fmt.Sprintf("%s %s G=%d keys=%d", s.Workload, s.Library, s.Goroutines, s.Keys)
	case workload.W3:
		return fmt.Sprintf("%s %s N=%d", s.Workload, s.Library, s.Keys)
	case workload.W5:
		return fmt.Sprintf("%s %s keys=%d", s.Workload, s.Library, s.Keys)
	default:
		if s.Procs > 0 {
			return fmt.Sprintf("%s %s G=%d GOMAXPROCS=%d", s.Workload, s.Library, s.Goroutines, s.Procs)
		}
		return fmt.Sprintf("%s %s G=%d", s.Workload, s.Library, s.Goroutines)
	}
}

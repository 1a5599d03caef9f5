package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/sample"
	"github.com/locksmith-go/locksmith/bench/report"
	"github.com/locksmith-go/locksmith/bench/workload"
)

// Ceiling method (the one of BENCHMARKS.md in the project's shared notes, on
// rlock's own plain-lock scripts, workload.AcquireScript and ReleaseScript):
// redis-benchmark from 50 connections sends EVALSHA of the acquire script on
// lock:__rand_int__ with the arguments rlock sends (lease, owner), then, with
// the same depth, -n and key space, EVALSHA of the release script with rlock's
// arguments (owner, expected hold count 1, lease, unlock message "0", publish
// command "publish"). -n is sized from a short calibration run to take about
// the configured time. A run during which other processes used more than
// -other-max cores is retried (twice at most).
//
// Keys are random (redis-benchmark has nothing else), so the release run meets
// every case the script handles: a lock held once (hget, del, publish: rlock's
// uncontended release), a lock the acquire run took twice or more (hget, then
// the count-mismatch reply, nothing changed) and no lock (hget, nil). With n
// draws over K keys, a release finds a lock held once and releases it with
// share e^-λ(1-e^-λ), λ = n/K, at most 1/4 at λ = ln 2: the key space is
// 1.5 n for that (λ = 2/3, 25%). The release run records how many locks it
// really released (DBSIZE before minus after), so the report says what the
// release rate is made of; the acquire run is mostly first acquisitions
// (exists, hincrby, pexpire), the rest re-entries of the same cost.
const (
	ceilingClients = 50
	ceilingCalKeys = 100000 // key space of the calibration run
	ceilingOwner   = "bench-ceiling:1"
	ceilingKey     = "lock:__rand_int__"
)

// ceilingCommand returns redis-benchmark's command for test (ACQUIRE or
// RELEASE): EVALSHA of rlock's script with the keys and arguments rlock sends.
func ceilingCommand(test string, lease time.Duration) []string {
	ms := strconv.FormatInt(lease.Milliseconds(), 10)
	s, keys, args := workload.AcquireScript, []string(nil), []string(nil)
	if test == "ACQUIRE" {
		keys, args = workload.AcquireArgs(ceilingKey, ms, ceilingOwner)
	} else {
		s = workload.ReleaseScript
		keys, args = workload.ReleaseArgs(ceilingKey, ms, ceilingOwner)
	}
	cmd := append([]string{"EVALSHA", s.SHA, strconv.Itoa(len(keys))}, keys...)
	return append(cmd, args...)
}

var ceilingPipelines = []int{1, 16}

// measureCeiling runs the ceiling. It needs redis-benchmark on PATH (Debian
// package redis-tools, a dependency of redis-server).
func (r *runner) measureCeiling(ctx context.Context) report.Ceiling {
	c := report.Ceiling{Clients: ceilingClients, Scripts: scriptsLabel}
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		c.Error = "redis-benchmark not found (apt-get install redis-tools): no ceiling"
		return c
	}
	host, port, err := net.SplitHostPort(r.addr)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	// Load rlock's scripts; the server must name them by the SHA-1 the
	// library sends (EVALSHA of anything else would measure another script).
	for _, sc := range []*workload.Script{workload.AcquireScript, workload.ReleaseScript} {
		sha, err := r.admin.String(ctx, "SCRIPT", "LOAD", sc.Src)
		if err != nil {
			c.Error = fmt.Sprintf("SCRIPT LOAD: %v", err)
			return c
		}
		if sha != sc.SHA {
			c.Error = fmt.Sprintf("SCRIPT LOAD of %s: server SHA %s, rlock's %s", sc.Name, sha, sc.SHA)
			return c
		}
	}
	lease := 30 * time.Second
	argsFor := func(test string) []string { return ceilingCommand(test, lease) }
	for _, p := range ceilingPipelines {
		r.ui.step(fmt.Sprintf("ceiling P%d", p))
		// Calibrate: a short acquire run gives the rate to size -n from.
		calN := 20000 * p
		cal, err := r.benchmarkRun(ctx, bin, host, port, p, calN, ceilingCalKeys, argsFor("ACQUIRE"))
		if err != nil {
			c.Error = err.Error()
			return c
		}
		n := max(int(cal.PerSec*r.o.ceilingDur.Seconds()), 1000)
		keys := n + n/2
		r.flush(ctx)
		for _, test := range []string{"ACQUIRE", "RELEASE"} {
			var best *report.CeilingRun
			attempts := 0
			for attempts <= r.o.reruns {
				attempts++
				if test == "ACQUIRE" {
					r.flush(ctx)
				}
				r.waitQuiet(ctx)
				before := r.dbsize(ctx)
				run, err := r.benchmarkRun(ctx, bin, host, port, p, n, keys, argsFor(test))
				if err != nil {
					c.Error = err.Error()
					return c
				}
				if after := r.dbsize(ctx); test == "RELEASE" && before >= 0 && after >= 0 {
					run.Released = before - after // each deleted lock is one full release
				}
				if best == nil || run.OtherCPU < best.OtherCPU {
					best = &run
				}
				if run.OtherCPU <= r.o.otherMax || ctx.Err() != nil {
					break
				}
				if test == "RELEASE" {
					break // a release run needs the locks of its acquire run: keep it
				}
				if attempts <= r.o.reruns {
					r.ui.logf("ceiling %s P%d disturbed (other CPU %.2f cores), rerunning", test, p, run.OtherCPU)
				}
			}
			best.Test, best.Attempts = test, attempts
			best.Disturbed = best.OtherCPU > r.o.otherMax
			c.Runs = append(c.Runs, *best)
		}
		r.flush(ctx)
	}
	c.Finish()
	return c
}

// dbsize returns the number of keys on the server, or -1 when DBSIZE fails.
func (r *runner) dbsize(ctx context.Context) int {
	v, err := r.admin.Do(ctx, "DBSIZE")
	if n, ok := v.(int64); ok && err == nil {
		return int(n)
	}
	return -1
}

// benchmarkRun runs redis-benchmark once and measures the server, the tool and
// the machine while it runs.
func (r *runner) benchmarkRun(ctx context.Context, bin, host, port string, pipeline, n, keys int, command []string) (report.CeilingRun, error) {
	run := report.CeilingRun{Pipeline: pipeline, N: n, KeySpace: keys}
	args := append([]string{"-h", host, "-p", port, "-c", strconv.Itoa(ceilingClients), "-n", strconv.Itoa(n),
		"-r", strconv.Itoa(keys), "-P", strconv.Itoa(pipeline), "--csv"}, command...)
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	a, aerr := r.sample(ctx)
	if err := cmd.Run(); err != nil {
		return run, fmt.Errorf("redis-benchmark: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	b, berr := r.sample(ctx)
	if aerr == nil && berr == nil {
		w := sample.Between(a, b, r.ncpu)
		tool := workload.Cores(cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime(), w.Wall)
		run.ServerCPU, run.ToolCPU = w.ServerCores, tool
		run.OtherCPU = w.Other(tool, r.serverLocal)
	}
	if err := parseBenchmarkCSV(out.String(), &run); err != nil {
		return run, err
	}
	return run, nil
}

// parseBenchmarkCSV reads redis-benchmark --csv output: a header line, then
// "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
// "p95_latency_ms","p99_latency_ms","max_latency_ms".
func parseBenchmarkCSV(text string, run *report.CeilingRun) error {
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		return fmt.Errorf("redis-benchmark output: %w", err)
	}
	for _, row := range rows {
		if len(row) < 8 || row[0] == "test" {
			continue
		}
		vals := make([]float64, 7)
		for i := range vals {
			if vals[i], err = strconv.ParseFloat(row[i+1], 64); err != nil {
				return fmt.Errorf("redis-benchmark output: field %d of %q: %w", i+1, row, err)
			}
		}
		run.PerSec, run.AvgMs, run.P50Ms, run.P99Ms, run.MaxMs = vals[0], vals[1], vals[3], vals[5], vals[6]
		return nil
	}
	return fmt.Errorf("redis-benchmark output has no result row: %q", text)
}

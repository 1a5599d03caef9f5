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

// Ceiling method (the one of BENCHMARKS.md in the project's shared notes):
// redis-benchmark from 50 connections sends EVALSHA of the acquire script on
// lock:__rand_int__ (-r 100000), then, with the same depth and -n, EVALSHA of
// the release script (so most calls find a held lock: hexists, hincrby -1,
// then pexpire or del+publish). -n is sized from a short calibration run to
// take about the configured time. A run during which other processes used
// more than -other-max cores is retried (twice at most).
const (
	ceilingClients = 50
	ceilingRandom  = "100000"
	ceilingOwner   = "bench-ceiling:1"
)

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
	shas := map[string]string{}
	for name, s := range map[string]*workload.Script{"ACQUIRE": workload.AcquireScript, "RELEASE": workload.ReleaseScript} {
		sha, err := r.admin.String(ctx, "SCRIPT", "LOAD", s.Src)
		if err != nil {
			c.Error = fmt.Sprintf("SCRIPT LOAD: %v", err)
			return c
		}
		shas[name] = sha
	}
	lease := strconv.FormatInt((30 * time.Second).Milliseconds(), 10)
	argsFor := func(test string) []string {
		if test == "ACQUIRE" {
			return []string{"EVALSHA", shas[test], "1", "lock:__rand_int__", lease, ceilingOwner}
		}
		return []string{"EVALSHA", shas[test], "2", "lock:__rand_int__", "redisson_lock__channel:{lock:__rand_int__}",
			"0", lease, ceilingOwner}
	}
	for _, p := range ceilingPipelines {
		r.ui.step(fmt.Sprintf("ceiling P%d", p))
		// Calibrate: a short acquire run gives the rate to size -n from.
		calN := 20000 * p
		cal, err := r.benchmarkRun(ctx, bin, host, port, p, calN, argsFor("ACQUIRE"))
		if err != nil {
			c.Error = err.Error()
			return c
		}
		n := max(int(cal.PerSec*r.o.ceilingDur.Seconds()), 1000)
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
				run, err := r.benchmarkRun(ctx, bin, host, port, p, n, argsFor(test))
				if err != nil {
					c.Error = err.Error()
					return c
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

// benchmarkRun runs redis-benchmark once and measures the server, the tool and
// the machine while it runs.
func (r *runner) benchmarkRun(ctx context.Context, bin, host, port string, pipeline, n int, command []string) (report.CeilingRun, error) {
	run := report.CeilingRun{Pipeline: pipeline, N: n}
	args := append([]string{"-h", host, "-p", port, "-c", strconv.Itoa(ceilingClients), "-n", strconv.Itoa(n),
		"-r", ceilingRandom, "-P", strconv.Itoa(pipeline), "--csv"}, command...)
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

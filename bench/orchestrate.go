package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/redisadmin"
	"github.com/locksmith-go/locksmith/bench/internal/report"
	"github.com/locksmith-go/locksmith/bench/internal/sample"
	"github.com/locksmith-go/locksmith/bench/internal/workload"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// scriptsLabel names the scripts the ceiling and the raw baselines use: the
// library's own plain-lock scripts, with their SHA-1s.
var scriptsLabel = fmt.Sprintf("rlock's own %s (SHA-1 %s) and %s (SHA-1 %s), as the library sends them",
	workload.AcquireScript.Name, workload.AcquireScript.SHA, workload.ReleaseScript.Name, workload.ReleaseScript.SHA)

// run is the orchestrator: it returns the process exit code (0 when the
// report was produced, 1 on a fatal error, 2 on bad flags).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if err.Error() != "flag: help requested" {
			fmt.Fprintln(stderr, "bench:", err)
		}
		return 2
	}
	if o.dryRun {
		cases := plan(o)
		for _, c := range cases {
			fmt.Fprintln(stdout, describe(c))
		}
		fmt.Fprintf(stdout, "%d cases × %d runs = %d runs, estimated %s (plus the ceiling and the peers' build)\n",
			len(cases), o.repeat, len(cases)*o.repeat, estimate(cases, o.repeat).Round(time.Second))
		return 0
	}
	var rep *report.Report
	if o.fromPath != "" {
		rep, err = report.ReadJSON(o.fromPath)
	} else {
		u := newUI(stderr, o.progressBar, o.verbose)
		rep, err = orchestrate(ctx, o, u)
		u.close()
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	fmt.Fprint(stdout, report.Text(rep))
	for _, out := range []struct {
		path  string
		write func(string, *report.Report) error
	}{{o.jsonPath, report.WriteJSON}, {o.htmlPath, report.WriteHTML}, {o.mdPath, report.WriteMarkdown}} {
		if out.path == "" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(out.path), 0o755); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		if err := out.write(out.path, rep); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		fmt.Fprintln(stdout, "wrote", out.path)
	}
	if ctx.Err() != nil {
		return 1
	}
	return 0
}

// orchestrate starts (or reaches) the server, builds the peers, measures the
// ceiling and runs every case.
func orchestrate(ctx context.Context, o options, u *ui) (*report.Report, error) {
	rep := &report.Report{Meta: report.Meta{
		Started: time.Now().UTC(), Command: "go run ./bench " + strings.Join(os.Args[1:], " "),
		GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU(),
		CPUModel: cpuModel(), Quick: o.quick, DurationSec: o.duration.Seconds(), WarmupSec: o.warmup.Seconds(),
		Workloads: o.workloads, Libraries: o.libs, N: o.n, HoldSec: o.hold.Seconds(), TTLSec: o.ttl.Seconds(),
		LeaseSec: o.lease.Seconds(), OtherMax: o.otherMax, Scripts: scriptsLabel, Repeat: o.repeat, Seed: o.seed,
	}}
	if o.traceDir != "" {
		// Made once here, so that a directory that cannot be made stops the run before any case does.
		if err := os.MkdirAll(o.traceDir, 0o755); err != nil {
			return nil, fmt.Errorf("-trace-dir: %w", err)
		}
	}
	ours := oursFactories()
	var cases []workload.Spec
	for _, c := range plan(o) {
		base, _, _ := strings.Cut(c.Library, ":")
		if inThisBinary(c.Library) && ours[base] == nil {
			continue
		}
		cases = append(cases, c)
	}
	for _, l := range append(o.libs, transports(o.libs)...) {
		base, _, _ := strings.Cut(l, ":")
		if inThisBinary(l) && ours[base] == nil {
			note := fmt.Sprintf("%s: not in this build (the ours adapters need rlock and conn; build tag ours)", l)
			if !contains(rep.Meta.Notes, note) {
				rep.Meta.Notes = append(rep.Meta.Notes, note)
				u.logf("%s", note)
			}
		}
	}

	r := &runner{o: o, ui: u, ncpu: runtime.NumCPU()}
	r.addr = o.addr
	if r.addr == "" {
		u.logf("starting redis-server on loopback")
		srv, err := redistest.StartServer()
		if err != nil {
			return nil, fmt.Errorf("starting the embedded redis-server: %w", err)
		}
		defer srv.Close()
		r.addr = srv.Addr()
		rep.Meta.Embedded = true
	}
	r.serverLocal = isLoopback(r.addr)
	rep.Meta.ServerAddr = r.addr
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	admin, err := redisadmin.Dial(dctx, r.addr)
	cancel()
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	r.admin = admin
	if info, err := admin.String(ctx, "INFO", "server"); err == nil {
		if s, err := sample.ParseInfo(info); err == nil {
			rep.Meta.RedisVersion = s.Version
		}
	}
	if r.self, err = os.Executable(); err != nil {
		return nil, err
	}
	needPeers := false
	for _, c := range cases {
		needPeers = needPeers || !inThisBinary(c.Library)
	}
	if needPeers {
		r.peers = o.peersBin
		if r.peers == "" {
			tmp, err := os.MkdirTemp("", "locksmith-bench-*")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(tmp)
			u.logf("building the peers binary (bench/peers)")
			if r.peers, err = buildPeers(ctx, o.peersDir, tmp); err != nil {
				return nil, err
			}
		}
	}

	order := schedule(cases, o.repeat, o.seed)
	u.logf("%d cases × %d runs in a random order (-seed %d), estimated %s", len(cases), o.repeat, o.seed,
		estimate(cases, o.repeat).Round(time.Minute))
	libs := make([]string, 0, len(cases))
	for _, c := range cases {
		if !contains(libs, c.Library) {
			libs = append(libs, c.Library)
		}
	}
	steps := len(order)
	if o.ceiling {
		steps += ceilingSteps(libs)
	}
	u.start(steps)
	if o.ceiling {
		rep.Ceiling = r.measureCeiling(ctx, libs)
		if rep.Ceiling.Error != "" {
			u.logf("ceiling: %s", rep.Ceiling.Error)
		}
	} else {
		rep.Ceiling = report.Ceiling{Error: "not measured (-ceiling=false)", Clients: ceilingClients, Scripts: scriptsLabel}
	}
	runs := make([][]workload.Record, len(cases))
	for _, i := range order {
		if ctx.Err() != nil {
			break
		}
		c := cases[i]
		u.step(describe(c))
		rec := r.runCase(ctx, c)
		runs[i] = append(runs[i], rec)
		rep.Runs = append(rep.Runs, rec)
		u.finished(summary(c, rec))
	}
	for i := range cases {
		if len(runs[i]) > 0 {
			rep.Records = append(rep.Records, report.Aggregate(runs[i]))
		}
	}
	rep.Meta.Finished = time.Now().UTC()
	if ctx.Err() != nil {
		rep.Meta.Notes = append(rep.Meta.Notes, "interrupted: the report is partial")
	}
	return rep, nil
}

// summary is the one-line result of a case for logs.
func summary(c workload.Spec, r workload.Record) string {
	s := describe(c) + ": "
	switch {
	case r.NotApplicable != "":
		return s + "n/a (" + r.NotApplicable + ")"
	case r.Errors > 0 && r.Ops == 0:
		return s + "error: " + r.ErrorSample
	}
	s += fmt.Sprintf("%.0f ops/s, p50 %.0f µs, p99 %.0f µs, other CPU %.2f", r.OpsPerSec, r.P50us, r.P99us, r.OtherCPU)
	if r.Errors > 0 {
		s += fmt.Sprintf(", %d errors", r.Errors)
	}
	return s
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// cpuModel reads the CPU model name from /proc/cpuinfo ("" elsewhere).
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

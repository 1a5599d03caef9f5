package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/redisadmin"
	"github.com/locksmith-go/locksmith/bench/internal/sample"
	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

// runner runs cases, each in its own process, and the ceiling.
type runner struct {
	o           options
	addr        string
	admin       *redisadmin.Client
	serverLocal bool   // the server's CPU is part of this machine's
	self        string // this binary (runs ours)
	peers       string // the peers binary
	ncpu        int
	ui          *ui
}

// quietPoll is the interval over which machine load is measured while
// waiting for a quiet machine.
const quietPoll = 250 * time.Millisecond

// waitQuiet waits until the machine's busy cores fall to -other-max or below
// (nothing of ours runs between cases), at most -quiet-wait. It returns how
// long it waited.
func (r *runner) waitQuiet(ctx context.Context) time.Duration {
	start := time.Now()
	for time.Since(start) < r.o.quietMax && ctx.Err() == nil {
		a, err := sample.ReadMachine()
		if err != nil {
			return 0 // no /proc/stat: nothing to wait for
		}
		t := time.NewTimer(quietPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return time.Since(start)
		case <-t.C:
		}
		b, err := sample.ReadMachine()
		if err != nil {
			return 0
		}
		if sample.BusyCores(a, b, r.ncpu) <= r.o.otherMax {
			break
		}
	}
	return time.Since(start)
}

// sample takes one Point: wall clock, /proc/stat and INFO.
func (r *runner) sample(ctx context.Context) (sample.Point, error) {
	p := sample.Point{At: time.Now()}
	m, err := sample.ReadMachine()
	if err != nil {
		return p, err
	}
	p.Machine = m
	info, err := r.admin.String(ctx, "INFO", "server", "cpu", "commandstats")
	if err != nil {
		return p, err
	}
	p.Server, err = sample.ParseInfo(info)
	return p, err
}

// flush empties the server between cases.
func (r *runner) flush(ctx context.Context) {
	if _, err := r.admin.Do(ctx, "FLUSHALL"); err != nil {
		r.ui.logf("FLUSHALL: %v", err)
	}
}

// runCase runs spec, rerunning it (up to -reruns times) when other processes
// disturbed it, and returns the least disturbed record.
func (r *runner) runCase(ctx context.Context, spec workload.Spec) workload.Record {
	var best *workload.Record
	attempts := 0
	for attempts <= r.o.reruns && ctx.Err() == nil {
		attempts++
		quiet := r.waitQuiet(ctx)
		spec.RunID = fmt.Sprintf("%x", time.Now().UnixNano()&0xffffff)
		var rec workload.Record
		var err error
		if workload.Contended(spec.Workload) {
			spec.CheckAddr = r.addr // the critical section's exclusion check runs on the server under test
		}
		if workload.Spread(spec.Workload) {
			rec, err = r.runSpread(ctx, spec)
		} else {
			rec, err = r.runOnce(ctx, spec)
		}
		r.flush(context.WithoutCancel(ctx))
		rec.QuietWaitSec = quiet.Seconds()
		if err != nil {
			rec.Errors++
			if rec.ErrorSample == "" {
				rec.ErrorSample = err.Error()
			}
			r.ui.logf("%s: %v", describe(spec), err)
		}
		if best == nil || rec.OtherCPU < best.OtherCPU {
			best = &rec
		}
		if rec.NotApplicable != "" || rec.OtherCPU <= r.o.otherMax || err != nil {
			break
		}
		if attempts <= r.o.reruns {
			r.ui.logf("%s disturbed (other CPU %.2f cores), rerunning", describe(spec), rec.OtherCPU)
		}
	}
	if best == nil {
		return workload.Record{Workload: spec.Workload, Library: spec.Library, Goroutines: spec.Goroutines,
			Keys: spec.Keys, Errors: 1, ErrorSample: "interrupted", ClientCmds: -1}
	}
	best.Attempts = attempts
	best.Disturbed = best.NotApplicable == "" && best.OtherCPU > r.o.otherMax
	return *best
}

// caseTimeout bounds a case process: its phases plus slack for start-up,
// W3's acquisitions and releases, and teardown.
func (r *runner) caseTimeout(spec workload.Spec) time.Duration {
	d := spec.Warmup + spec.Duration + spec.Hold + 30*time.Second
	if spec.Processes > 1 {
		d += time.Duration(spec.Processes) * 250 * time.Millisecond // starting the processes on a small machine
	}
	if spec.Workload == workload.HeldMany {
		d += 2*workload.AcquireBudget(spec.Keys) + time.Minute // acquire, release, ownership check
	}
	return d
}

// runOnce runs spec in a new process and completes its record with the
// server-side and machine-wide figures sampled at the window's edges.
func (r *runner) runOnce(ctx context.Context, spec workload.Spec) (workload.Record, error) {
	rec := workload.Record{Workload: spec.Workload, Library: spec.Library, Goroutines: spec.Goroutines,
		Keys: spec.Keys, ClientCmds: -1}
	bin := r.peers
	if inThisBinary(spec.Library) {
		bin = r.self
	}
	flags := workload.CaseFlags{Addr: r.addr, Spec: spec, Lease: r.o.lease, WatchdogTTL: r.o.ttl, Sync: true}
	cmd := exec.Command(bin, append([]string{"case"}, flags.Args()...)...)
	cmd.SysProcAttr = caseSysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return rec, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return rec, err
	}
	stderr := &tailBuffer{max: 16 << 10}
	var logFile *os.File
	if r.o.logDir != "" {
		name := strings.NewReplacer(" ", "_", ":", "-", "=", "").Replace(describe(spec)) + ".log"
		if logFile, err = os.Create(filepath.Join(r.o.logDir, name)); err == nil {
			defer logFile.Close()
		}
	}
	if logFile != nil {
		cmd.Stderr = io.MultiWriter(stderr, logFile)
	} else {
		cmd.Stderr = stderr
	}
	if err := cmd.Start(); err != nil {
		return rec, fmt.Errorf("starting %s: %w", bin, err)
	}
	stopKill := r.killAfter(cmd.Process, r.caseTimeout(spec))
	defer stopKill()

	var a, b sample.Point
	var sampled [2]bool
	var got bool
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var protoErr error
	for sc.Scan() {
		var m workload.Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			protoErr = fmt.Errorf("case output %q: %w", truncate(sc.Text(), 200), err)
			continue
		}
		switch m.Event {
		case workload.EventBegin:
			a, err = r.sample(ctx)
			sampled[0] = err == nil
			_, _ = io.WriteString(stdin, "go\n")
		case workload.EventEnd:
			b, err = r.sample(ctx)
			sampled[1] = err == nil
			_, _ = io.WriteString(stdin, "go\n")
		case workload.EventRecord:
			if m.Record != nil {
				rec, got = *m.Record, true
			}
		}
	}
	_ = stdin.Close()
	waitErr := cmd.Wait()
	if !got {
		msg := strings.TrimSpace(stderr.String())
		if protoErr != nil {
			return rec, protoErr
		}
		return rec, fmt.Errorf("case process ended without a record (%v): %s", waitErr, truncate(msg, 2000))
	}
	if sampled[0] && sampled[1] {
		r.complete(&rec, sample.Between(a, b, r.ncpu))
	}
	return rec, nil
}

// runSpread runs a spread case (W2x, W4x): Spec.Processes case processes
// at once, one common window, merged into one record completed with the
// server-side and machine-wide figures sampled at the window's edges.
func (r *runner) runSpread(ctx context.Context, spec workload.Spec) (workload.Record, error) {
	bin := r.peers
	if inThisBinary(spec.Library) {
		bin = r.self
	}
	stderrs := make([]*tailBuffer, spec.Processes)
	var logs []*os.File
	defer func() {
		for _, f := range logs {
			f.Close()
		}
	}()
	var a, b sample.Point
	var sampled [2]bool
	ctx, cancel := context.WithTimeout(ctx, r.caseTimeout(spec))
	defer cancel()
	rec, err := workload.RunSpread(ctx, workload.SpreadRun{
		Spec: spec,
		Command: func(s workload.Spec) *exec.Cmd {
			flags := workload.CaseFlags{Addr: r.addr, Spec: s, Lease: r.o.lease, WatchdogTTL: r.o.ttl, Sync: true}
			cmd := exec.Command(bin, append([]string{"case"}, flags.Args()...)...)
			cmd.SysProcAttr = caseSysProcAttr()
			tail := &tailBuffer{max: 4 << 10}
			stderrs[s.Process] = tail
			cmd.Stderr = tail
			if r.o.logDir != "" {
				name := strings.NewReplacer(" ", "_", ":", "-", "=", "").Replace(describe(s)) +
					fmt.Sprintf(".p%d.log", s.Process)
				if f, err := os.Create(filepath.Join(r.o.logDir, name)); err == nil {
					logs = append(logs, f)
					cmd.Stderr = io.MultiWriter(tail, f)
				}
			}
			return cmd
		},
		Begin: func() {
			var err error
			a, err = r.sample(ctx)
			sampled[0] = err == nil
		},
		End: func() {
			var err error
			b, err = r.sample(ctx)
			sampled[1] = err == nil
		},
	})
	if err == nil && rec.Ops == 0 && rec.NotApplicable == "" {
		for i, t := range stderrs {
			if t == nil {
				continue
			}
			if msg := strings.TrimSpace(t.String()); msg != "" {
				err = fmt.Errorf("no acquisition; case process %d said: %s", i, truncate(msg, 2000))
				break
			}
		}
	}
	if sampled[0] && sampled[1] {
		r.complete(&rec, sample.Between(a, b, r.ncpu))
	}
	return rec, err
}

// complete fills the record's server-side figures from the window's samples.
func (r *runner) complete(rec *workload.Record, w sample.Window) {
	rec.ServerCPU = w.ServerCores
	rec.OtherCPU = w.Other(rec.ClientCPU, r.serverLocal)
	secs := w.Wall.Seconds()
	if secs > 0 {
		rec.ServerCmdsPerSec = float64(w.TotalCalls) / secs
	}
	if rec.ClientCmds < 0 {
		rec.ClientCmds = max(w.Sum(sample.TopLevelOnly...)-rec.CheckScripts, 0)
		rec.ClientCmdsEstimated = true
		if rec.Ops > 0 {
			rec.ClientCmdsPerOp = float64(rec.ClientCmds) / float64(rec.Ops)
		}
	}
	if rec.Workload == workload.HeldMany {
		if secs > 0 {
			rec.RenewCmdsPerSec = float64(w.Sum("evalsha", "eval")) / secs
			// Every library's renewal sets the key's expiry once per lock, inside its script.
			rec.LocksRenewedPerSec = float64(w.Sum("pexpire", "pexpireat", "expire", "expireat")) / secs
		}
		return // ops are the acquisitions, made before the window
	}
	if rec.Ops > 0 {
		rec.ServerCmdsPerOp = float64(w.TotalCalls) / float64(rec.Ops)
	}
}

// killAfter stops p (SIGTERM, then SIGKILL 5 s later) if it is still running
// after d. The returned function cancels that.
func (r *runner) killAfter(p *os.Process, d time.Duration) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	// Owned by runOnce: ends when the case ends (done) or after killing it;
	// waited for by the returned function.
	go func() {
		defer wg.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-done:
			return
		case <-t.C:
		}
		r.ui.logf("case process %d overran %s: stopping it", p.Pid, d)
		_ = p.Signal(syscall.SIGTERM)
		t.Reset(5 * time.Second)
		select {
		case <-done:
		case <-t.C:
			_ = p.Kill()
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// tailBuffer keeps the last max bytes written to it. Safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex // guards b
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

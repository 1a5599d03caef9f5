package workload

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/redisadmin"
)

// ProcessDetail is what one process of a W2/W4 case reports besides its
// Record, for RunSpread to merge the processes: the counts per goroutine,
// the latencies, the grant order on each key and the acquisitions whose
// server-side check completed.
type ProcessDetail struct {
	Process      int             `json:"process"`
	PerGoroutine []int64         `json:"per_goroutine"` // acquisitions (W4: hand-offs) in the window
	Reacq        int64           `json:"reacq"`         // of which the key's previous holder was the same goroutine
	Latency      SparseHistogram `json:"latency"`
	Grants       [][]int64       `json:"grants"`  // per key: grant sequence numbers of the window's acquisitions (spread cases)
	Checked      []int64         `json:"checked"` // per key: acquisitions whose server-side check completed, in and out of the window
	Finished     bool            `json:"finished"`
}

// SpreadRun describes a case whose contenders are spread over processes
// (W2x, W4x), for RunSpread.
type SpreadRun struct {
	// Spec is the case; each process runs it with Process set to its index.
	// Spec.CheckAddr is also where RunSpread reads the check's counters.
	Spec Spec
	// Command returns the case process for one process's spec, not started:
	// the case subcommand (CaseMain) with CaseFlags{Spec: spec, Sync: true}.
	// RunSpread sets its standard input and output; the caller its standard
	// error and process attributes.
	Command func(spec Spec) *exec.Cmd
	// Begin and End, when set, are called at the common start and end
	// instants of the window (the orchestrator samples the server there).
	Begin, End func()
}

// spreadLead is how far ahead of the last process's readiness the common
// start instant is set: enough to write it to every process and for each to
// wake up, not so much that the warm-up grows.
func spreadLead(processes int) time.Duration {
	return 20*time.Millisecond + time.Duration(processes)*500*time.Microsecond
}

// procEvent is one line (or the end) of a case process's output.
type procEvent struct {
	i   int
	m   Message
	err error // a line that is not a Message
	eof bool
}

// RunSpread runs a case in Spec.Processes processes at once, every process
// its own client of the library, and merges their records into one: every
// process warms up, then all open their window at one common instant and
// close it at that instant plus Spec.Duration. It blocks until every process
// has exited; when ctx ends, the processes are stopped (SIGTERM, SIGKILL 5 s
// later) and the record covers what they reported.
func RunSpread(ctx context.Context, sr SpreadRun) (Record, error) {
	spec := sr.Spec
	spec.defaults()
	p := max(spec.Processes, 1)
	spec.Processes = p
	rec := Record{Workload: spec.Workload, Library: spec.Library, Goroutines: spec.Goroutines, Keys: spec.Keys,
		Processes: p, ClientCmds: -1}
	events := make(chan procEvent, 4*p)
	cmds := make([]*exec.Cmd, 0, p)
	stdins := make([]io.WriteCloser, 0, p)
	var startErr error
	for i := 0; i < p; i++ {
		s := spec
		s.Process = i
		cmd := sr.Command(s)
		in, err := cmd.StdinPipe()
		if err != nil {
			startErr = err
			break
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			startErr = err
			break
		}
		if err := cmd.Start(); err != nil {
			startErr = fmt.Errorf("workload: starting case process %d: %w", i, err)
			break
		}
		cmds, stdins = append(cmds, cmd), append(stdins, in)
		// Owned by RunSpread: ends at the process's end of output, which
		// RunSpread waits for below.
		go readEvents(i, out, events)
	}
	stop := context.AfterFunc(ctx, func() { terminate(cmds) })
	defer stop()
	records := make([]*Record, p)
	details := make([]*ProcessDetail, p)
	var protoErr error
	aborted := startErr != nil
	if aborted {
		closeAll(stdins)
	}
	begins, ended := 0, 0
	for ended < len(cmds) {
		ev := <-events
		switch {
		case ev.eof:
			ended++
			if begins < p && !aborted {
				aborted = true // a process ended before its window: nobody gets one
				closeAll(stdins)
			}
			continue
		case ev.err != nil:
			protoErr = ev.err
			continue
		}
		switch ev.m.Event {
		case EventBegin:
			if begins++; begins == p && !aborted {
				at := time.Now().Add(spreadLead(p))
				line := "go " + strconv.FormatInt(at.UnixNano(), 10) + "\n"
				for _, in := range stdins {
					_, _ = io.WriteString(in, line)
				}
				sleepCtx(ctx, time.Until(at))
				if sr.Begin != nil {
					sr.Begin()
				}
				sleepCtx(ctx, time.Until(at.Add(spec.Duration)))
				if sr.End != nil {
					sr.End()
				}
			}
		case EventEnd:
			_, _ = io.WriteString(stdins[ev.i], "go\n")
		case EventRecord:
			records[ev.i], details[ev.i] = ev.m.Record, ev.m.Detail
		}
	}
	closeAll(stdins)
	var waitErrs []error
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil && records[i] == nil {
			waitErrs = append(waitErrs, fmt.Errorf("case process %d: %w", i, err))
		}
	}
	if startErr != nil {
		terminate(cmds)
		return rec, startErr
	}
	merged, err := MergeSpread(spec, records, details)
	if err != nil {
		return merged, errors.Join(append([]error{err, protoErr}, waitErrs...)...)
	}
	if merged.NotApplicable == "" && spec.CheckAddr != "" && !slices.ContainsFunc(details, unfinished) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		names := make([]string, spec.Keys)
		checked := make([]int64, spec.Keys)
		for k := range names {
			names[k] = spec.key(k)
			for _, d := range details {
				if k < len(d.Checked) {
					checked[k] += d.Checked[k]
				}
			}
		}
		exp, got, bad, err := CompareCounters(cctx, spec.CheckAddr, names, checked)
		cancel()
		if err != nil {
			return merged, err
		}
		merged.ServerCounterExpected, merged.ServerCounterGot = exp, got
		merged.Violations += bad
	}
	if protoErr != nil || len(waitErrs) > 0 {
		merged.Notes = append(merged.Notes, errors.Join(append([]error{protoErr}, waitErrs...)...).Error())
	}
	return merged, nil
}

func unfinished(d *ProcessDetail) bool { return d == nil || !d.Finished }

// readEvents forwards process i's output lines to events, then its end.
func readEvents(i int, out io.Reader, events chan<- procEvent) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		var m Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			events <- procEvent{i: i, err: fmt.Errorf("case process %d wrote %q: %w", i, truncateLine(sc.Text()), err)}
			continue
		}
		events <- procEvent{i: i, m: m}
	}
	events <- procEvent{i: i, eof: true}
}

func truncateLine(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func closeAll(ws []io.WriteCloser) {
	for _, w := range ws {
		_ = w.Close()
	}
}

// terminate stops the started processes: SIGTERM (a case process then
// reports what it measured), SIGKILL 5 s later.
func terminate(cmds []*exec.Cmd) {
	for _, c := range cmds {
		if c.Process != nil {
			_ = c.Process.Signal(syscall.SIGTERM)
		}
	}
	time.AfterFunc(5*time.Second, func() {
		for _, c := range cmds {
			if c.Process != nil {
				_ = c.Process.Kill() // fails harmlessly once the process has been waited for
			}
		}
	})
}

// MergeSpread merges the records and details of a spread case's processes
// (nil for a process that reported nothing) into the case's record: sums of
// operations, CPU, errors and violations; latencies over every process;
// fairness per goroutine and per process; the longest run of grants to one
// process. A process that lacked the workload's feature makes the case not
// applicable.
func MergeSpread(spec Spec, records []*Record, details []*ProcessDetail) (Record, error) {
	r := Record{Workload: spec.Workload, Library: spec.Library, Goroutines: spec.Goroutines, Keys: spec.Keys,
		Processes: len(records), CSHoldUs: float64(spec.CSHold.Nanoseconds()) / 1e3}
	lat := NewLatencies(1)
	var perG, perP []int64
	var reacq int64
	var window float64
	var windows int
	cmdsKnown := true
	missing := 0
	for i, x := range records {
		if x == nil {
			missing++
			continue
		}
		if x.NotApplicable != "" {
			r.NotApplicable = x.NotApplicable
			return r, nil
		}
		r.GOMAXPROCS, r.GOMAXPROCSSet = x.GOMAXPROCS, x.GOMAXPROCSSet
		r.Ops += x.Ops
		if x.WindowSec > 0 {
			window += x.WindowSec
			windows++
		}
		r.ClientCPUSeconds += x.ClientCPUSeconds
		if x.ClientCmds < 0 {
			cmdsKnown = false
		}
		r.ClientCmds += x.ClientCmds
		r.Errors += x.Errors
		if r.ErrorSample == "" && x.ErrorSample != "" {
			r.ErrorSample = fmt.Sprintf("process %d: %s", i, x.ErrorSample)
		}
		r.GaveUps += x.GaveUps
		r.Waiting += x.Waiting
		r.WaitingOldestMs = max(r.WaitingOldestMs, x.WaitingOldestMs)
		r.Abandoned += x.Abandoned
		r.Violations += x.Violations
		r.MarkerViolations += x.MarkerViolations
		r.CheckScripts += x.CheckScripts
		r.CounterExpected += x.CounterExpected
		r.CounterGot += x.CounterGot
		r.GoroutinesPeak += x.GoroutinesPeak
		r.HeapPeakBytes += x.HeapPeakBytes
		for _, n := range x.Notes {
			r.Notes = append(r.Notes, fmt.Sprintf("process %d: %s", i, n))
		}
		d := details[i]
		if d == nil {
			continue
		}
		var sum int64
		for _, n := range d.PerGoroutine {
			sum += n
		}
		perG = append(perG, d.PerGoroutine...)
		perP = append(perP, sum)
		reacq += d.Reacq
		if err := lat.Add(d.Latency); err != nil {
			return r, fmt.Errorf("process %d: %w", i, err)
		}
	}
	if missing > 0 {
		r.Errors += int64(missing)
		if r.ErrorSample == "" {
			r.ErrorSample = fmt.Sprintf("%d of %d case processes reported nothing", missing, len(records))
		}
	}
	if windows > 0 {
		r.WindowSec = window / float64(windows)
		r.OpsPerSec = float64(r.Ops) / r.WindowSec
	}
	if !cmdsKnown {
		r.ClientCmds = -1
	} else if r.Ops > 0 {
		r.ClientCmdsPerOp = float64(r.ClientCmds) / float64(r.Ops)
	}
	if r.WindowSec > 0 {
		r.ClientCPU = r.ClientCPUSeconds / r.WindowSec
	}
	r.Jain = Jain(perG)
	r.MinPerG, r.MaxPerG = MinMax(perG)
	r.JainPerProcess = Jain(perP)
	r.MinPerProcess, r.MaxPerProcess = MinMax(perP)
	if r.Ops > 0 {
		r.ReacqPct = 100 * float64(reacq) / float64(r.Ops)
	}
	r.LongestRun = LongestRun(details)
	lat.Summarize(&r)
	return r, nil
}

// LongestRun returns the longest run of consecutive grants to one process
// on any key, from the grant sequence numbers each process recorded (nil
// details are skipped). A gap in the sequence (a grant outside the window)
// ends a run.
func LongestRun(details []*ProcessDetail) int {
	type grant struct {
		seq  int64
		proc int
	}
	byKey := map[int][]grant{}
	for i, d := range details {
		if d == nil {
			continue
		}
		for k, seqs := range d.Grants {
			for _, s := range seqs {
				byKey[k] = append(byKey[k], grant{s, i})
			}
		}
	}
	longest := 0
	for _, gs := range byKey {
		slices.SortFunc(gs, func(a, b grant) int { return cmp.Compare(a.seq, b.seq) })
		run := 0
		for j, g := range gs {
			if j > 0 && g.proc == gs[j-1].proc && g.seq == gs[j-1].seq+1 {
				run++
			} else {
				run = 1
			}
			longest = max(longest, run)
		}
	}
	return longest
}

// CompareCounters reads the server-side check's counter of every lock in
// names and compares it with checked, the acquisitions whose check
// completed: it returns the sums and the number of keys that differ (each a
// violation). It blocks, bounded by ctx.
func CompareCounters(ctx context.Context, addr string, names []string, checked []int64) (exp, got, bad int64, err error) {
	c, err := redisadmin.Dial(ctx, addr)
	if err != nil {
		return 0, 0, 0, err
	}
	defer c.Close()
	for i, name := range names {
		n, err := readCounter(ctx, c, name)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("workload: reading the check counter of %s: %w", name, err)
		}
		exp += checked[i]
		got += n
		if n != checked[i] {
			bad++
		}
	}
	return exp, got, bad, nil
}

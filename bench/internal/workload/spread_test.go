package workload

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// spreadSpec is a short spread case on srv for the test libraries.
func spreadSpec(w, lib string, procs, g, keys int, srv *redistest.Server) Spec {
	return Spec{Workload: w, Library: lib, Goroutines: g, Keys: keys, Processes: procs,
		Duration: 400 * time.Millisecond, Warmup: 100 * time.Millisecond, CheckAddr: srv.Addr(),
		CSHold: 50 * time.Microsecond, RunID: w + lib}
}

// runSpread runs s in test binaries started as case processes.
func runSpread(t *testing.T, s Spec, srv *redistest.Server) Record {
	t.Helper()
	var begins, ends int
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := RunSpread(ctx, SpreadRun{
		Spec: s,
		Command: func(s Spec) *exec.Cmd {
			f := CaseFlags{Addr: srv.Addr(), Spec: s, Lease: 10 * time.Second, WatchdogTTL: 3 * time.Second, Sync: true}
			cmd := exec.Command(os.Args[0], f.Args()...)
			cmd.Env = append(os.Environ(), caseEnv+"=1")
			cmd.Stderr = os.Stderr
			return cmd
		},
		Begin: func() { begins++ },
		End:   func() { ends++ },
	})
	if err != nil {
		t.Fatalf("RunSpread: %v", err)
	}
	if begins != 1 || ends != 1 {
		t.Fatalf("window samples: %d begins, %d ends; want 1 and 1", begins, ends)
	}
	if r.Errors != 0 || r.Processes != s.Processes {
		t.Fatalf("errors %d (%s), processes %d", r.Errors, r.ErrorSample, r.Processes)
	}
	return r
}

func TestSpreadCatchesALockThatDoesNotExcludeAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	r := runSpread(t, spreadSpec(ContendedKeysSpread, "broken", 3, 2, 1, srv), srv)
	if r.MarkerViolations == 0 {
		t.Errorf("the owner marker saw no overlap in %d acquisitions of a lock that never excludes", r.Ops)
	}
	if r.ServerCounterGot >= r.ServerCounterExpected {
		t.Errorf("server counter %d for %d checked acquisitions: the non-atomic increment lost nothing",
			r.ServerCounterGot, r.ServerCounterExpected)
	}
	if r.Violations <= r.MarkerViolations {
		t.Errorf("violations %d, marker violations %d: the counter's mismatch is not counted", r.Violations,
			r.MarkerViolations)
	}
}

func TestSpreadFindsNoViolationWithALockThatExcludes(t *testing.T) {
	srv := redistest.Start(t)
	r := runSpread(t, spreadSpec(ContendedKeysSpread, "poll", 3, 2, 2, srv), srv)
	if r.Ops == 0 || r.OpsPerSec <= 0 || r.LatencyCount != r.Ops {
		t.Fatalf("acquisitions %d (%v/s), latencies %d", r.Ops, r.OpsPerSec, r.LatencyCount)
	}
	if r.Violations != 0 || r.ServerCounterExpected == 0 || r.ServerCounterGot != r.ServerCounterExpected {
		t.Fatalf("violations %d (markers %d), server counter %d/%d", r.Violations, r.MarkerViolations,
			r.ServerCounterExpected, r.ServerCounterGot)
	}
	if r.ServerCounterExpected < r.Ops {
		t.Errorf("server counter expected %d < %d acquisitions in the window", r.ServerCounterExpected, r.Ops)
	}
	if r.JainPerProcess <= 0 || r.JainPerProcess > 1 || r.MinPerProcess > r.MaxPerProcess || r.MaxPerProcess > r.Ops {
		t.Errorf("Jain per process %v, min/max %d/%d", r.JainPerProcess, r.MinPerProcess, r.MaxPerProcess)
	}
	if r.LongestRun < 1 || int64(r.LongestRun) > r.Ops {
		t.Errorf("longest run %d of %d grants", r.LongestRun, r.Ops)
	}
	// Scripts are counted between the window's edges, acquisitions when they complete inside it: each
	// goroutine's section in flight at an edge may add or miss its two.
	if slack := int64(2 * 3 * 2); r.CheckScripts < 2*r.Ops-slack || r.CheckScripts > 2*r.Ops+slack {
		t.Errorf("%d check scripts for %d acquisitions, want 2 each", r.CheckScripts, r.Ops)
	}
}

func TestSpreadHandoffWakesTheReleaserInAnotherProcess(t *testing.T) {
	srv := redistest.Start(t)
	r := runSpread(t, spreadSpec(HandoffSpread, "poll", 2, 1, 1, srv), srv)
	// One goroutine per process: every hand-off crosses processes, and a
	// releaser only asks again once the other process's holder woke it.
	if r.Ops == 0 || r.LatencyCount == 0 || r.P50us <= 0 {
		t.Fatalf("hand-offs %d, latencies %d, p50 %v µs", r.Ops, r.LatencyCount, r.P50us)
	}
	if r.ReacqPct != 0 || r.Violations != 0 {
		t.Errorf("reacq %v%%, violations %d", r.ReacqPct, r.Violations)
	}
	if r.LongestRun != 1 {
		t.Errorf("longest run %d: with one goroutine per process, grants must alternate", r.LongestRun)
	}
}

func TestServerCheckCatchesALockThatDoesNotExcludeInOneProcess(t *testing.T) {
	srv := redistest.Start(t)
	s := spreadSpec(ContendedKeys, "broken", 1, 4, 1, srv)
	r := run(t, brokenLock{}, s)
	if r.MarkerViolations == 0 || r.ServerCounterGot >= r.ServerCounterExpected {
		t.Fatalf("markers %d, server counter %d/%d: the server-side check missed a lock that never excludes",
			r.MarkerViolations, r.ServerCounterExpected, r.ServerCounterGot)
	}
	s.RunID = "w2poll"
	lib, _ := newPollLock(context.Background(), Config{Addr: srv.Addr(), Lease: 10 * time.Second})
	r = run(t, lib, s)
	if r.Ops == 0 || r.Violations != 0 || r.ServerCounterGot != r.ServerCounterExpected {
		t.Fatalf("a lock that excludes: acquisitions %d, violations %d, server counter %d/%d", r.Ops, r.Violations,
			r.ServerCounterExpected, r.ServerCounterGot)
	}
}

func TestLongestRunBreaksAtAnotherProcessAndAtGaps(t *testing.T) {
	d := []*ProcessDetail{
		{Grants: [][]int64{{1, 2, 3, 7, 8}, {1}}},
		{Grants: [][]int64{{4, 5}, {2, 3}}},
		nil,
	}
	// key 0: p0 1-3 (3), p1 4-5, gap, p0 7-8; key 1: p0 1, p1 2-3.
	if got := LongestRun(d); got != 3 {
		t.Fatalf("LongestRun = %d, want 3", got)
	}
}

func TestMergeSpreadSumsAndMergesLatencies(t *testing.T) {
	a, b := NewLatencies(1), NewLatencies(1)
	for i := 0; i < 99; i++ {
		a.Record(0, 100*time.Microsecond)
	}
	b.Record(0, 50*time.Millisecond)
	recs := []*Record{
		{Ops: 99, WindowSec: 1, ClientCPUSeconds: 0.5, ClientCmds: 10, Violations: 1, MarkerViolations: 1},
		{Ops: 1, WindowSec: 1, ClientCPUSeconds: 0.25, ClientCmds: 5, Waiting: 1, WaitingOldestMs: 1500},
	}
	det := []*ProcessDetail{
		{PerGoroutine: []int64{50, 49}, Latency: a.Export()},
		{PerGoroutine: []int64{1, 0}, Reacq: 1, Latency: b.Export()},
	}
	r, err := MergeSpread(Spec{Workload: ContendedKeysSpread, Goroutines: 2, Keys: 1}, recs, det)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops != 100 || r.OpsPerSec != 100 || r.ClientCPU != 0.75 || r.ClientCmds != 15 || r.Violations != 1 ||
		r.Waiting != 1 || r.Processes != 2 {
		t.Fatalf("merged %+v", r)
	}
	if r.LatencyCount != 100 || r.P50us < 99 || r.P50us > 101 || r.MaxUs != 50000 {
		t.Errorf("latencies: %d, p50 %v µs, max %v µs", r.LatencyCount, r.P50us, r.MaxUs)
	}
	if r.MinPerProcess != 1 || r.MaxPerProcess != 99 || r.JainPerProcess > 0.52 || r.MinPerG != 0 || r.MaxPerG != 50 {
		t.Errorf("per process %d/%d Jain %v, per G %d/%d", r.MinPerProcess, r.MaxPerProcess, r.JainPerProcess,
			r.MinPerG, r.MaxPerG)
	}
	if r.ReacqPct != 1 {
		t.Errorf("reacq %v%%", r.ReacqPct)
	}
}

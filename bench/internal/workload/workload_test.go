package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

func spec(w string, g, keys int) Spec {
	return Spec{Workload: w, Library: "mem", Goroutines: g, Keys: keys,
		Duration: 200 * time.Millisecond, Warmup: 20 * time.Millisecond, Hold: 100 * time.Millisecond, RunID: "test"}
}

func run(t *testing.T, lib Library, s Spec) Record {
	t.Helper()
	win := &countingWindow{}
	r, err := Run(context.Background(), lib, s, win)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if r.NotApplicable == "" && (win.begins.Load() != 1 || win.ends.Load() != 1) {
		t.Fatalf("window handshakes: %d begins, %d ends; want 1 and 1", win.begins.Load(), win.ends.Load())
	}
	return r
}

func TestPairsCountsPairsLatenciesAndCommands(t *testing.T) {
	const g = 8
	r := run(t, newMemLib(), spec(W1, g, 0))
	if r.Ops == 0 || r.OpsPerSec <= 0 || r.LatencyCount != r.Ops {
		t.Fatalf("ops %d, ops/s %v, latencies %d", r.Ops, r.OpsPerSec, r.LatencyCount)
	}
	if r.Keys != g {
		t.Errorf("keys = %d, want one per goroutine", r.Keys)
	}
	// The fake counts one command per Lock and one per Unlock. Commands are counted between the window's edges
	// and pairs when they complete inside it: each goroutine's pair in flight at an edge may add or miss a
	// command (2 per goroutine), and the fake is so fast that a preemption between reading the count and opening
	// the window lets more through (allowed: 0.5 %). Double or missed counting is far outside either.
	if d, slack := r.ClientCmds-2*r.Ops, 2*g+r.ClientCmds/200; d < -slack || d > slack {
		t.Errorf("client cmds = %d for %d pairs (%.3f per pair), want 2 per pair ± 2 per goroutine",
			r.ClientCmds, r.Ops, r.ClientCmdsPerOp)
	}
	if r.WindowSec < 0.19 || r.WindowSec > 1 {
		t.Errorf("window = %v s for a 200 ms window", r.WindowSec)
	}
	if r.Stalled != 0 || r.Abandoned != 0 || r.Errors != 0 {
		t.Errorf("stalled %d, abandoned %d, errors %d", r.Stalled, r.Abandoned, r.Errors)
	}
	if r.GoroutinesPeak < g {
		t.Errorf("goroutines peak %d with %d workers", r.GoroutinesPeak, g)
	}
}

func TestPairsReportsStalledAndAbandonedWorkersAndStillFinishes(t *testing.T) {
	lib := &stuckLib{release: make(chan struct{})}
	defer close(lib.release) // lets the abandoned workers go before goleak looks
	s := spec(W1, 4, 0)
	s.Duration = 1200 * time.Millisecond
	s.StallAge = time.Second
	s.StopGrace = 100 * time.Millisecond
	start := time.Now()
	r := run(t, lib, s)
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Run took %v with workers stuck in the library", took)
	}
	if r.Stalled != 4 || r.StalledOldestMs < 1000 {
		t.Errorf("stalled = %d (oldest %.0f ms), want 4 older than 1 s", r.Stalled, r.StalledOldestMs)
	}
	if r.Abandoned != 4 {
		t.Errorf("abandoned = %d, want 4", r.Abandoned)
	}
	if r.Ops != 0 {
		t.Errorf("ops = %d", r.Ops)
	}
}

func TestContendedFindsNoViolationWithARealLock(t *testing.T) {
	r := run(t, newMemLib(), spec(W2, 16, 2))
	if r.Ops == 0 {
		t.Fatal("no acquisition")
	}
	if r.Violations != 0 || r.CounterExpected != r.CounterGot || r.CounterExpected < r.Ops {
		t.Fatalf("violations %d, counter %d/%d, ops %d", r.Violations, r.CounterExpected, r.CounterGot, r.Ops)
	}
	if r.Jain <= 0 || r.Jain > 1 || r.MinPerG > r.MaxPerG {
		t.Errorf("Jain %v, min/max %d/%d", r.Jain, r.MinPerG, r.MaxPerG)
	}
	if r.ReacqPct < 0 || r.ReacqPct > 100 {
		t.Errorf("reacq %v%%", r.ReacqPct)
	}
}

func TestContendedCountsOverlapsWhenTheLockDoesNotExclude(t *testing.T) {
	lib := newMemLib()
	lib.broken = true
	r := run(t, lib, spec(W2, 16, 1))
	if r.Violations == 0 {
		t.Fatalf("a lock without mutual exclusion passed the check (%d acquisitions)", r.Ops)
	}
}

func TestHandoffMeasuresEveryAcquisitionAsAHandOff(t *testing.T) {
	r := run(t, newMemLib(), spec(W4, 4, 1))
	if r.Ops == 0 || r.LatencyCount != r.Ops {
		t.Fatalf("hand-offs %d, latencies %d", r.Ops, r.LatencyCount)
	}
	if r.ReacqPct != 0 {
		t.Errorf("reacq = %v%%: a releaser waits for another holder before asking again", r.ReacqPct)
	}
	if r.Violations != 0 {
		t.Errorf("violations = %d", r.Violations)
	}
}

func TestHeldCountsLossesReportedByTheLibraryAndTheServer(t *testing.T) {
	lib := newMemLib()
	s := spec(W3, 0, 300)
	lib.lost[s.keyWithDefaults(7)] = true
	lib.lost[s.keyWithDefaults(42)] = true
	r := run(t, lib, s)
	if r.Acquired != 300 || r.Keys != 300 {
		t.Fatalf("acquired %d of %d", r.Acquired, r.Keys)
	}
	if r.LostLib != 2 || r.LostServer != 2 || r.Lost != 2 {
		t.Errorf("lost lib/server/total = %d/%d/%d, want 2/2/2", r.LostLib, r.LostServer, r.Lost)
	}
	if r.RenewCmdsExpected != 3 { // ceil(300/100) batches every second
		t.Errorf("expected renewals/s = %v, want 3", r.RenewCmdsExpected)
	}
	if r.HoldSec < 0.09 || r.AcquireSec <= 0 || r.OpsPerSec <= 0 {
		t.Errorf("hold %v s, acquire %v s, rate %v", r.HoldSec, r.AcquireSec, r.OpsPerSec)
	}
	if r.GoroutinesBase <= 0 || r.HeapHoldBytes == 0 {
		t.Errorf("goroutines base %d, heap hold %d", r.GoroutinesBase, r.HeapHoldBytes)
	}
}

func TestHeldBoundsAcquisitionsThatNeverReturn(t *testing.T) {
	lib := newMemLib()
	defer close(lib.unhang) // lets the stuck acquirer go before goleak looks
	s := spec(W3, 0, 50)
	s.AcquireTimeout = 200 * time.Millisecond
	s.StopGrace = 100 * time.Millisecond
	lib.hang[s.keyWithDefaults(3)] = true
	start := time.Now()
	r := run(t, lib, s)
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("W3 took %v with one acquisition stuck", took)
	}
	if r.Acquired != 49 {
		t.Errorf("acquired %d, want 49 of 50", r.Acquired)
	}
	if r.Abandoned != 1 || len(r.Notes) == 0 {
		t.Errorf("abandoned %d, notes %q: the stuck acquirer is not reported", r.Abandoned, r.Notes)
	}
}

func TestHeldIsNotApplicableWithoutAWatchdog(t *testing.T) {
	r := run(t, &stuckLib{}, spec(W3, 0, 10))
	if r.NotApplicable == "" {
		t.Fatal("a library without Watchdog ran W3")
	}
}

func TestAsyncKeepsKeysInFlightFromOneGoroutine(t *testing.T) {
	lib := &memAsync{memLib: newMemLib()}
	r := run(t, lib, spec(W5, 1, 16))
	if err := lib.Close(); err != nil {
		t.Fatal(err)
	}
	if r.Ops == 0 || r.Goroutines != 1 || r.Keys != 16 {
		t.Fatalf("ops %d, goroutines %d, keys %d", r.Ops, r.Goroutines, r.Keys)
	}
	if r.Abandoned != 0 || r.Errors != 0 {
		t.Errorf("abandoned %d, errors %d (%s)", r.Abandoned, r.Errors, r.ErrorSample)
	}
}

func TestAsyncIsNotApplicableWithoutAnAsyncAPI(t *testing.T) {
	r := run(t, newMemLib(), spec(W5, 1, 4))
	if r.NotApplicable == "" {
		t.Fatal("a library without Async ran W5")
	}
}

func TestUnknownWorkloadIsAnError(t *testing.T) {
	if _, err := Run(context.Background(), newMemLib(), spec("w9", 1, 1), nil); err == nil {
		t.Fatal("no error for workload w9")
	}
}

func TestCaseRunsAtTheGOMAXPROCSItIsGivenAndRecordsIt(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	factories := map[string]Factory{"mem": func(context.Context, Config) (Library, error) { return newMemLib(), nil }}
	for _, c := range []struct {
		procs string
		want  int
		set   bool
	}{{"0", runtime.GOMAXPROCS(0), false}, {"1", 1, true}} {
		var out, errOut bytes.Buffer
		code := CaseMain([]string{"-lib", "mem", "-g", "2", "-duration", "50ms", "-warmup", "0s", "-procs", c.procs},
			factories, strings.NewReader(""), &out, &errOut)
		if code != 0 {
			t.Fatalf("-procs %s: exit %d: %s", c.procs, code, errOut.String())
		}
		var m Message
		if err := json.Unmarshal(out.Bytes(), &m); err != nil || m.Record == nil {
			t.Fatalf("-procs %s: output %q: %v", c.procs, out.String(), err)
		}
		if m.Record.GOMAXPROCS != c.want || m.Record.GOMAXPROCSSet != c.set || m.Record.Ops == 0 {
			t.Errorf("-procs %s: record GOMAXPROCS %d (set %t), %d ops; want %d (set %t)", c.procs,
				m.Record.GOMAXPROCS, m.Record.GOMAXPROCSSet, m.Record.Ops, c.want, c.set)
		}
	}
	var errOut bytes.Buffer
	if code := CaseMain([]string{"-lib", "mem", "-procs", "-2"}, factories, strings.NewReader(""), io.Discard,
		&errOut); code != 2 || !strings.Contains(errOut.String(), "-procs -2") {
		t.Errorf("-procs -2: exit %d, %q; want 2 and a message naming the flag", code, errOut.String())
	}
}

func TestCaseFlagsOfAOneProcessCaseParse(t *testing.T) {
	var out bytes.Buffer
	f := CaseFlags{Addr: "127.0.0.1:1", Spec: Spec{Workload: W1, Library: "nope", Goroutines: 1, Keys: 1}}
	var stderr bytes.Buffer
	// An unknown library fails after the flags parsed (exit 2 with its own message).
	CaseMain(f.Args(), map[string]Factory{}, strings.NewReader(""), &out, &stderr)
	if !strings.Contains(stderr.String(), `unknown library "nope"`) {
		t.Fatalf("the flags of a one-process case do not parse: %s", stderr.String())
	}
}

package chaos

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// workerCommand re-executes the test binary as a worker.
func workerCommand(args []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	return cmd
}

// runChaos runs one scenario and fails the test on any violation, printing the report.
func runChaos(t *testing.T, cfg RunConfig) *Result {
	t.Helper()
	cfg.Dir = t.TempDir()
	cfg.Command = workerCommand
	cfg.Logf = t.Logf
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+2*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", res.Report)
	if keep := os.Getenv("CHAOS_KEEP"); keep != "" {
		// CHAOS_KEEP=dir keeps every run's logs (worker logs, faults.json) for analysis.
		dst := filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_"))
		os.RemoveAll(dst)
		if err := os.CopyFS(dst, os.DirFS(cfg.Dir)); err != nil {
			t.Logf("keeping logs: %v", err)
		} else {
			t.Logf("logs copied to %s", dst)
		}
	}
	if !res.Report.OK() {
		t.Errorf("%d violations", len(res.Report.Violations))
	}
	if len(res.LeftoverKeys) > 0 {
		t.Errorf("lock keys left on the server after every worker stopped and the leases ended: %v", res.LeftoverKeys)
	}
	if len(res.ChannelsAfter) > 0 {
		t.Errorf("channels still subscribed after every worker stopped: %v", res.ChannelsAfter)
	}
	for _, p := range OverBounds(res) {
		t.Errorf("during the run: %s", p)
	}
	return res
}

func TestChaosNoFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos runs take seconds")
	}
	res := runChaos(t, RunConfig{Duration: 5 * time.Second})
	if res.Report.Believed < 100 {
		t.Errorf("only %d acquisitions: the workers did not run", res.Report.Believed)
	}
}

// TestChaos is the short CI version of the checker: for each fault kind, workers run for about
// 16 s against a real redis-server while the fault is injected three times, and the log must show no overlap of
// believed holds, no token out of order, no waiter past its bound, no worker that failed to stop, and the server
// must be left without lock keys or subscriptions.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos runs take seconds")
	}
	for _, kind := range AllFaultKinds {
		t.Run(string(kind), func(t *testing.T) {
			res := runChaos(t, RunConfig{
				Duration:    16 * time.Second,
				Warmup:      2 * time.Second,
				FaultEvery:  4500 * time.Millisecond,
				Faults:      []FaultKind{kind},
				Persistence: kind == FaultRestartPersist,
				Seed:        uint64(time.Now().UnixNano()),
			})
			if got := res.Report.FaultCounts[kind]; got < 2 {
				t.Errorf("only %d %s faults injected", got, kind)
			}
			if res.Report.Believed < 100 {
				t.Errorf("only %d acquisitions", res.Report.Believed)
			}
		})
	}
}

// TestChaosLeaseExpiry stresses the lease's end without any injected fault: every acquire takes a fixed lease and
// every holder keeps working past it, while other workers wait for the lock. Each hold thus ends with the holder's
// context cancelled locally (ErrLeaseExpired) while a waiter is about to be let in by the server's expiry (the lost
// holds are not released), under the CPU load of a dozen race-instrumented processes: the context must always end
// first.
func TestChaosLeaseExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos runs take seconds")
	}
	res := runChaos(t, RunConfig{
		Duration: 12 * time.Second,
		Locks:    2,
		Worker: WorkerConfig{
			Forms:      "trylease,locklease",
			Lease:      300 * time.Millisecond,
			HoldMin:    250 * time.Millisecond,
			HoldMax:    500 * time.Millisecond,
			UnlockLost: -1, // the next holder is let in by the server's expiry
		},
	})
	if res.Report.Lost < 10 {
		t.Errorf("only %d holds outlived their lease: the scenario did not happen", res.Report.Lost)
	}
}

package main

import (
	"context"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/redisadmin"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// TestCeilingRunsRlockScripts runs the ceiling against a fresh server and
// checks on the server that what redis-benchmark sent was EVALSHA of rlock's
// own plain-lock scripts (the SHAs rlock exports), with arguments the scripts
// accept (no error reply at all), and that the release run really released
// locks (del + publish), not only missed them.
func TestCeilingRunsRlockScripts(t *testing.T) {
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		t.Fatal("redis-benchmark not found: apt-get install -y redis-tools (or make deps)")
	}
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := redisadmin.Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	u := newUI(io.Discard, "off", false)
	defer u.close()
	r := &runner{o: options{ceilingDur: 200 * time.Millisecond, otherMax: float64(runtime.NumCPU())},
		ui: u, addr: srv.Addr(), admin: admin, serverLocal: true, ncpu: runtime.NumCPU()}

	c := r.measureCeiling(ctx)
	if c.Error != "" {
		t.Fatalf("ceiling: %s", c.Error)
	}
	if len(c.Runs) != 2*len(ceilingPipelines) || c.PairsPerSec <= 0 {
		t.Fatalf("ceiling runs %+v, pairs/s %v", c.Runs, c.PairsPerSec)
	}

	for _, name := range []string{rlock.ScriptLockAcquire, rlock.ScriptLockRelease} {
		s, ok := rlock.LookupScript(name)
		if !ok {
			t.Fatalf("rlock exports no %s", name)
		}
		if !strings.Contains(c.Scripts, s.SHA1) {
			t.Errorf("the ceiling's scripts label %q does not name %s's SHA %s", c.Scripts, name, s.SHA1)
		}
		exists, err := srv.DoStrings(ctx, "SCRIPT", "EXISTS", s.SHA1)
		if err != nil || len(exists) != 1 || exists[0] != "1" {
			t.Errorf("SCRIPT EXISTS %s (%s) = %v, %v: the ceiling did not load rlock's script", s.SHA1, name,
				exists, err)
		}
	}
	stats, err := srv.DoString(ctx, "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	calls := commandCalls(stats, "evalsha")
	var sent int64
	for _, run := range c.Runs {
		sent += int64(run.N)
	}
	// Calibration runs come on top of the measured ones.
	if calls < sent {
		t.Errorf("the server saw %d EVALSHA calls, the measured runs alone sent %d", calls, sent)
	}
	if n := commandCalls(stats, "eval"); n != 0 {
		t.Errorf("%d EVAL calls: redis-benchmark should have run the loaded SHAs only", n)
	}
	errs, err := srv.DoString(ctx, "INFO", "errorstats")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(errs, "errorstat_") {
		t.Errorf("the server answered errors (wrong keys or arguments?):\n%s", errs)
	}
	for _, run := range c.Runs {
		t.Logf("%s P%d: n %d, keys %d, %.0f/s, released %d", run.Test, run.Pipeline, run.N, run.KeySpace, run.PerSec,
			run.Released)
		if run.Test == "RELEASE" && (run.Released <= 0 || run.Released > run.N) {
			t.Errorf("P%d release run released %d locks of %d calls", run.Pipeline, run.Released, run.N)
		}
	}
}

// commandCalls returns the calls of cmd in INFO commandstats, 0 when absent.
func commandCalls(info, cmd string) int64 {
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls=")
		if !ok {
			continue
		}
		var n int64
		for _, ch := range rest {
			if ch < '0' || ch > '9' {
				break
			}
			n = n*10 + int64(ch-'0')
		}
		return n
	}
	return 0
}

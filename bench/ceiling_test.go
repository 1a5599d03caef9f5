package main

import (
	"context"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/redisadmin"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// TestCeilingRunsEveryLibrarysOwnCommandsAndReleasesEveryLock runs the
// ceiling against a fresh server for libraries of every kind and checks on
// the server that it ran rlock's own scripts (the SHAs rlock exports) and the
// peers' commands, that no reply was an error or anything but a grant or a
// release (every release found its lock held once), and that no lock is left.
func TestCeilingRunsEveryLibrarysOwnCommandsAndReleasesEveryLock(t *testing.T) {
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

	libs := []string{"ours", "rueidis:flush", "redsync", "redsync:1ms", "redislock", "rueidislock"}
	c := r.measureCeiling(ctx, libs)
	if c.Error != "" {
		t.Fatalf("ceiling: %s", c.Error)
	}
	if len(c.Kinds) != 4 || len(c.Runs) != 4*len(ceilingPipelines) || c.PairsPerSec <= 0 || c.Pipeline != 16 {
		t.Fatalf("ceiling kinds %+v, runs %+v, pairs/s %v", c.Kinds, c.Runs, c.PairsPerSec)
	}
	for _, lib := range libs {
		if c.For(lib) <= 0 {
			t.Errorf("no ceiling for %s", lib)
		}
	}
	for _, run := range c.Runs {
		t.Logf("%s P%d: %d pairs, %.0f/s, p50 %.2f ms", run.Kind, run.Pipeline, run.Pairs, run.PerSec, run.P50Ms)
		if run.Pairs <= 0 || run.PerSec <= 0 || run.Unexpected != 0 {
			t.Errorf("%s P%d: %d pairs (%v/s), %d unexpected replies", run.Kind, run.Pipeline, run.Pairs, run.PerSec,
				run.Unexpected)
		}
	}
	for _, name := range []string{rlock.ScriptLockAcquire, rlock.ScriptLockRelease} {
		s, ok := rlock.LookupScript(name)
		if !ok {
			t.Fatalf("rlock exports no %s", name)
		}
		if !strings.Contains(c.Scripts, s.SHA1) {
			t.Errorf("the ceiling's scripts label %q does not name %s's SHA %s", c.Scripts, name, s.SHA1)
		}
	}
	stats, err := srv.DoString(ctx, "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"evalsha", "set", "del", "publish"} {
		if commandCalls(stats, cmd) == 0 {
			t.Errorf("the server ran no %s", cmd)
		}
	}
	if n := commandCalls(stats, "eval"); n != 0 {
		t.Errorf("%d EVAL calls: the ceiling should run the loaded SHAs only", n)
	}
	errs, err := srv.DoString(ctx, "INFO", "errorstats")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(errs, "errorstat_") {
		t.Errorf("the server answered errors (wrong keys or arguments?):\n%s", errs)
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

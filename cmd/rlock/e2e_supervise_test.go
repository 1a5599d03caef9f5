//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// supervisionTrialsEnv sets how many trials TestE2EKilledRlockNeverLetsTwoCommandsOverlap runs (default 3,
// about two seconds each): RLOCK_E2E_TRIALS=20 for the long run.
const supervisionTrialsEnv = "RLOCK_E2E_TRIALS"

// kill -9 of rlock while its command runs: the command ignores SIGTERM and has started a child that ignores it
// too. Nothing renews the lock any more; the supervisor must stop both (SIGTERM, then SIGKILL after -grace)
// before the lease ends on the server and a second rlock, waiting for the lock, starts its command. The proof is
// the processes' own timestamped output: every tick of the first command and its child comes before the second
// command's start.
func TestE2EKilledRlockNeverLetsTwoCommandsOverlap(t *testing.T) {
	trials := 3
	if v := os.Getenv(supervisionTrialsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", supervisionTrialsEnv, v)
		}
		trials = n
	}
	srv := redistest.Start(t)
	for i := range trials {
		t.Run(fmt.Sprint("trial", i), func(t *testing.T) {
			name := fmt.Sprint("job", i)
			file := filepath.Join(t.TempDir(), "trace")
			// -watchdog 1500ms: the lease is renewed every 500ms, so at least about 1s of it is left on the server
			// when rlock dies; -grace 500ms (at most half of -watchdog) fits in it.
			flags := []string{"-watchdog", "1500ms", "-grace", "500ms"}
			a := startRlock(t, srv, execArgs(flags, name, helper(t, "tree", file, "A"))...)
			ready := strings.Fields(a.stdout.next(t))
			if len(ready) != 3 || ready[0] != "ready" {
				t.Fatalf("the first command said %q", ready)
			}
			b := startRlock(t, srv, execArgs(flags, name, helper(t, "mark", file, "B"))...)
			b.stderr.nextEvent(t, "waiting")

			killedAt := time.Now().UnixNano()
			a.signal(t, syscall.SIGKILL)
			if code := b.wait(t); code != 0 {
				t.Fatalf("the second rlock exited %d: %s", code, joined(b.stderr.rest(t)))
			}
			a.wait(t)
			// The first rlock's output pipes end when every process holding them has exited: its supervisor, the
			// command and the command's child.
			a.stdout.rest(t)
			a.stderr.rest(t)
			for _, p := range ready[1:] {
				pid, _ := strconv.Atoi(p)
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Fatalf("process %d of the first command still exists (kill 0: %v)", pid, err)
				}
			}
			checkStoppedBefore(t, file, killedAt, ready[1:])
		})
	}
}

// checkStoppedBefore reads the trace of TestE2EKilledRlockNeverLetsTwoCommandsOverlap: every tick of the first
// command's processes (pids) must come before the second command's start, and each of them must have ticked after
// rlock was killed (they ignored SIGTERM, so only SIGKILL stopped them); killedAt 0 skips that check.
func checkStoppedBefore(t *testing.T, file string, killedAt int64, pids []string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var start int64
	lastTick := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("malformed trace line %q", line)
		}
		ns, _ := strconv.ParseInt(f[3], 10, 64)
		switch f[0] {
		case "tick":
			lastTick[f[2]] = max(lastTick[f[2]], ns)
		case "start":
			start = ns
		}
	}
	if start == 0 {
		t.Fatalf("the second command never started:\n%s", data)
	}
	for _, pid := range pids {
		last, ok := lastTick[pid]
		switch {
		case !ok:
			t.Fatalf("process %s of the first command left no trace:\n%s", pid, data)
		case last >= start:
			t.Fatalf("process %s of the first command ticked at %d, %v after the second command started at %d: two "+
				"commands ran under one lock", pid, last, time.Duration(last-start), start)
		case last < killedAt:
			t.Fatalf("process %s of the first command stopped ticking before rlock was killed: the trial proves nothing", pid)
		case killedAt > 0:
			t.Logf("process %s: last tick %v after rlock's death, %v before the next command",
				pid, time.Duration(last-killedAt).Round(time.Millisecond), time.Duration(start-last).Round(time.Millisecond))
		}
	}
}

// startGroup starts rlock exec over a shell that starts a background sleep and prints its pid; it returns the
// rlock process and the sleep's pid.
func startGroup(t *testing.T, srv *redistest.Server, flags []string, script string) (*proc, int) {
	t.Helper()
	p := startRlock(t, srv, execArgs(flags, "job", []string{"sh", "-c", script})...)
	pid, err := strconv.Atoi(p.stdout.next(t))
	if err != nil {
		t.Fatalf("the shell did not print the sleep's pid: %v", err)
	}
	return p, pid
}

// checkGone fails unless process pid has ended: kill 0 says ESRCH once it is reaped, and /proc says Z while it is a
// zombie that nobody reaped yet (when its supervisor was killed, an orphan goes to init, which here may never
// reap). rlock returns only once its supervisor saw the whole group end, so no waiting is needed.
func checkGone(t *testing.T, pid int, what string) {
	t.Helper()
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return
	}
	if stat, rerr := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); rerr == nil {
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("%s (pid %d) still runs after rlock exited (kill 0: %v)", what, pid, err)
}

// A lost lock stops the command's whole process group: the background sleep of sh -c 'sleep 47 & wait' goes
// too, also when it ignores SIGTERM (then SIGKILL after -grace).
func TestE2ELostLockStopsTheWholeProcessGroup(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		killed       bool
	}{
		{"sleep in the background", "sleep 47 & echo $!; wait", false},
		{"sleep that ignores SIGTERM", `trap "" TERM; sleep 47 & echo $!; wait`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			p, sleepPid := startGroup(t, srv, []string{"-watchdog", "900ms", "-grace", "300ms"}, tc.script)
			if code, _, errs := runRlock(t, srv, "force-unlock", "job"); code != 0 {
				t.Fatalf("force-unlock: %d %q", code, errs)
			}
			if code := p.wait(t); code != exitLost {
				t.Fatalf("rlock exited %d, want %d", code, exitLost)
			}
			checkGone(t, sleepPid, "the command's background sleep")
			events := p.stderr.rest(t)
			if lost := findEvent(t, events, "lost"); lost.str("cause") != "lock_lost" {
				t.Fatalf("lost event %v", lost)
			}
			if killed := strings.Contains(joined(events), `"event":"killed"`); killed != tc.killed {
				t.Fatalf("killed event: %v, want %v:\n%s", killed, tc.killed, joined(events))
			}
		})
	}
}

// A command that ends leaving processes behind in its group: they are stopped before the lock is released, and
// rlock exits with the command's own status.
func TestE2ELeftoversAreStoppedBeforeTheRelease(t *testing.T) {
	srv := redistest.Start(t)
	p, sleepPid := startGroup(t, srv, nil, "sleep 47 & echo $!; exit 3")
	if code := p.wait(t); code != 3 {
		t.Fatalf("rlock exited %d, want the command's 3", code)
	}
	checkGone(t, sleepPid, "the sleep the command left behind")
	events := p.stderr.rest(t)
	if got := eventNames(t, events); strings.Join(got, " ") != "acquired started exited leftovers released" {
		t.Fatalf("events %v", got)
	}
}

// A signal sent to rlock reaches the command's whole group, once.
func TestE2EForwardedSignalReachesTheWholeGroup(t *testing.T) {
	srv := redistest.Start(t)
	p, sleepPid := startGroup(t, srv, nil, "sleep 47 & echo $!; wait")
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("rlock exited %d, want %d (sh killed by SIGTERM)", code, 128+int(syscall.SIGTERM))
	}
	checkGone(t, sleepPid, "the command's background sleep")
	if n := strings.Count(joined(p.stderr.rest(t)), `"event":"signal"`); n != 1 {
		t.Fatalf("%d signal events, want 1", n)
	}
}

// A fixed lease: the group is stopped before the lease ends, SIGKILL included, so a waiting rlock's command
// starts after the first command's last trace. The lease of 2 s gives a margin of 200 ms, which the supervisor
// keeps on a loaded test machine too.
func TestE2EFixedLeaseStopsTheGroupBeforeTheLeaseEnds(t *testing.T) {
	srv := redistest.Start(t)
	file := filepath.Join(t.TempDir(), "trace")
	a := startRlock(t, srv, execArgs([]string{"-lease", "2s", "-grace", "300ms"}, "job", helper(t, "tree", file, "A"))...)
	ready := strings.Fields(a.stdout.next(t))
	b := startRlock(t, srv, execArgs(nil, "job", helper(t, "mark", file, "B"))...)
	if code := a.wait(t); code != exitLost {
		t.Fatalf("rlock exited %d, want %d", code, exitLost)
	}
	if code := b.wait(t); code != 0 {
		t.Fatalf("the second rlock exited %d", code)
	}
	events := joined(a.stderr.rest(t))
	for _, want := range []string{`"event":"lost"`, `"cause":"lease_expired"`, `"event":"killed"`} {
		if !strings.Contains(events, want) {
			t.Fatalf("no %s in:\n%s", want, events)
		}
	}
	checkStoppedBefore(t, file, 0, ready[1:])
}

// The supervisor killed from outside (kill -9): rlock, still alive, kills the command's group itself, since
// nothing would stop it when the lock ends, and says that the command's status is unknown.
func TestE2EKilledSupervisorTakesTheCommandDown(t *testing.T) {
	srv := redistest.Start(t)
	p, sleepPid := startGroup(t, srv, nil, "sleep 47 & echo $!; wait")
	// rlock learns the command's process group from the supervisor's report, which rlock's "started" event follows;
	// the command may print before that report is written (see "What nothing can cover" in README.md).
	p.stderr.nextEvent(t, "started")
	sup := childrenOf(t, p.cmd.Process.Pid)
	if len(sup) != 1 {
		t.Fatalf("rlock has children %v, want its supervisor alone", sup)
	}
	if err := syscall.Kill(sup[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != exitSoftware {
		t.Fatalf("rlock exited %d, want %d", code, exitSoftware)
	}
	p.stdout.rest(t) // ends when the command's group, which shares the pipe, is gone
	checkGone(t, sleepPid, "the command's background sleep")
	if e := findEvent(t, p.stderr.rest(t), "error"); !strings.Contains(e.str("error"), "supervisor") {
		t.Fatalf("error event %v", e)
	}
}

// childrenOf returns the pids of pid's children (Linux: /proc/PID/task/*/children).
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil || len(files) == 0 {
		t.Skipf("no /proc/%d/task/*/children here: %v", pid, err)
	}
	var kids []int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // the thread exited meanwhile
		}
		for _, w := range strings.Fields(string(data)) {
			n, _ := strconv.Atoi(w)
			kids = append(kids, n)
		}
	}
	return kids
}

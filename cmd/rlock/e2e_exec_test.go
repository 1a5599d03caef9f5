//go:build unix

package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// Two rlock exec processes on one name: the second waits while the first runs, then runs itself; the commands'
// start/end lines prove that they never overlapped.
func TestE2ETwoContendingExecsNeverOverlapAndBothRun(t *testing.T) {
	srv := redistest.Start(t)
	file := filepath.Join(t.TempDir(), "runs")

	a := startRlock(t, srv, execArgs(nil, "job", holdCmd(t, file, "A", ""))...)
	a.stdout.expect(t, "holding") // A runs its command under the lock
	acquiredA := a.stderr.nextEvent(t, "acquired")

	b := startRlock(t, srv, execArgs(nil, "job", holdCmd(t, file, "B", ""))...)
	waiting := b.stderr.nextEvent(t, "waiting")
	owners, _ := waiting["owners"].([]any)
	if len(owners) != 1 || owners[0].(map[string]any)["owner"] != acquiredA.str("owner") {
		t.Fatalf("B's waiting event does not name A (%s) as the holder: %v", acquiredA.str("owner"), waiting)
	}

	a.closeStdin() // A's command ends; A releases; B acquires
	if code := a.wait(t); code != 0 {
		t.Fatalf("A exited %d", code)
	}
	b.stdout.expect(t, "holding")
	b.closeStdin()
	if code := b.wait(t); code != 0 {
		t.Fatalf("B exited %d", code)
	}
	spans := checkNoOverlap(t, file)
	if len(spans) != 2 || spans[0].id != "A" || spans[1].id != "B" {
		t.Fatalf("runs %v, want A then B", spans)
	}
	// A's command had ended (exited event, written before the release is sent) when B got the lock. (A's released
	// event proves nothing here: B may be granted the lock before A has even read the server's reply.)
	exitedA := a.stderr.nextEvent(t, "exited")
	acquiredB := b.stderr.nextEvent(t, "acquired")
	ea, _ := exitedA.num("time_ms")
	ab, _ := acquiredB.num("time_ms")
	if ab < ea {
		t.Fatalf("B acquired at %v, before A's command exited at %v", ab, ea)
	}
	a.stderr.nextEvent(t, "released")
	if n, _ := hgetallLen(t, srv, "job"); n != 0 {
		t.Fatal("the lock is still there after both released it")
	}
}

// Several processes hammer one name with short commands: every run happens, none overlaps another.
func TestE2EManyContendingExecsNeverOverlap(t *testing.T) {
	srv := redistest.Start(t)
	file := filepath.Join(t.TempDir(), "runs")
	const workers, runs = 4, 5
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		// Owner: this test. Exits after its runs; waited for by wg.Wait.
		go func() {
			defer wg.Done()
			for r := range runs {
				id := fmt.Sprintf("w%d.%d", w, r)
				code, _, errs := runRlock(t, srv, execArgs(nil, "hot", holdCmd(t, file, id, "15ms"))...)
				if code != 0 {
					t.Errorf("%s exited %d:\n%s", id, code, joined(errs))
				}
			}
		}()
	}
	wg.Wait()
	spans := checkNoOverlap(t, file)
	if len(spans) != workers*runs {
		t.Fatalf("%d runs recorded, want %d", len(spans), workers*runs)
	}
}

func TestE2EWaitTimeoutExitCodeWithoutRunningTheCommand(t *testing.T) {
	srv := redistest.Start(t)
	code, owner, _ := runRlock(t, srv, "lock", "-hold", "1m", "job")
	if code != 0 || len(owner) != 1 {
		t.Fatalf("rlock lock: %d %q", code, owner)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	code, _, errs := runRlock(t, srv, execArgs([]string{"-wait", "200ms"}, "job", helper(t, "touch", marker))...)
	if code != exitNotAcquired {
		t.Fatalf("exit %d, want %d:\n%s", code, exitNotAcquired, joined(errs))
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the command ran without the lock")
	}
	to := findEvent(t, errs, "timeout")
	if waited, _ := to.num("waited_ms"); waited < 200 {
		t.Fatalf("gave up after %vms, before -wait 200ms", waited)
	}
	if owners, _ := to["owners"].([]any); len(owners) != 1 || owners[0].(map[string]any)["owner"] != owner[0] {
		t.Fatalf("timeout event does not name the holder %s: %v", owner[0], to)
	}
}

// force-unlock from outside while the command runs: the watchdog's next renewal finds the lock gone, the command
// gets SIGTERM, rlock exits with the lost code.
func TestE2EForceUnlockWhileRunningStopsTheCommand(t *testing.T) {
	srv := redistest.Start(t)
	p := startRlock(t, srv, execArgs([]string{"-watchdog", "900ms"}, "job", helper(t, "signals"))...)
	p.stdout.expect(t, "ready")
	code, out, errs := runRlock(t, srv, "force-unlock", "job")
	if code != 0 || !strings.Contains(joined(out), "job: force-unlocked (it was held by ") {
		t.Fatalf("force-unlock: %d %q %q", code, out, errs)
	}
	if got := p.stdout.next(t); got != "SIGTERM" {
		t.Fatalf("the command got %q, want SIGTERM", got)
	}
	if code := p.wait(t); code != exitLost {
		t.Fatalf("rlock exited %d, want %d", code, exitLost)
	}
	lost := p.stderr.nextEvent(t, "lost")
	if lost.str("cause") != "lock_lost" || lost.str("signal") != "SIGTERM" {
		t.Fatalf("lost event %v", lost)
	}
}

// The lease is long enough for a race-built helper to be ready for SIGTERM before the grace before its end.
func TestE2EFixedLeaseRunningOutStopsTheCommand(t *testing.T) {
	srv := redistest.Start(t)
	p := startRlock(t, srv, append([]string{"-v"}, execArgs([]string{"-lease", "2s"}, "job", helper(t, "signals"))[1:]...)...)
	p.stdout.expect(t, "ready")
	p.stdout.expect(t, "SIGTERM")
	if code := p.wait(t); code != exitLost {
		t.Fatalf("rlock exited %d, want %d", code, exitLost)
	}
	if msg := joined(p.stderr.rest(t)); !strings.Contains(msg, "the fixed -lease 2s of job is about to run out") {
		t.Fatalf("stderr does not explain the loss:\n%s", msg)
	}
}

// Redis dies while the command runs: no renewal can be confirmed, the lease runs out locally, the command is
// stopped before another owner could be let in.
func TestE2ERedisUnreachableWhileRunningStopsTheCommand(t *testing.T) {
	srv := redistest.Start(t)
	p := startRlock(t, srv, execArgs([]string{"-watchdog", "1s"}, "job", helper(t, "signals"))...)
	p.stdout.expect(t, "ready")
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	p.stdout.expect(t, "SIGTERM")
	if code := p.wait(t); code != exitLost {
		t.Fatalf("rlock exited %d, want %d", code, exitLost)
	}
	lost := p.stderr.nextEvent(t, "lost")
	if lost.str("cause") != "lease_expired" {
		t.Fatalf("lost event %v, want cause lease_expired", lost)
	}
}

func TestE2EExitCodes(t *testing.T) {
	srv := redistest.Start(t)
	if _, err := srv.Do(ctxTest(t), "SET", "a-string", "x"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string // in stderr
	}{
		{"command status", execArgs(nil, "job", helper(t, "exit", "3")), 3, ""},
		{"command killed", execArgs(nil, "job", helper(t, "selfkill")), 128 + int(syscall.SIGKILL), ""},
		{"not found", []string{"exec", "job", "--", "no-such-command-for-rlock"}, exitNotFound, "command not found"},
		{"usage", []string{"exec", "-wait"}, exitUsage, "flag needs an argument"},
		{"not a lock", []string{"exec", "a-string", "--", "true"}, exitSoftware, `the key "a-string" exists and is not a lock`},
		{"status free", []string{"status", "job"}, exitNo, ""},
		{"refused", []string{"-addr", "redis://" + closedPort(t), "exec", "job", "--", "true"}, exitUnavailable,
			"connection refused. Is redis-server running there?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runRlock(t, srv, tc.args...)
			if code != tc.code || !strings.Contains(joined(errs), tc.msg) {
				t.Fatalf("exit %d, want %d; stderr:\n%s\nwant %q in it", code, tc.code, joined(errs), tc.msg)
			}
		})
	}
}

func TestE2ESignalsAreForwarded(t *testing.T) {
	srv := redistest.Start(t)
	p := startRlock(t, srv, execArgs(nil, "job", helper(t, "signals"))...)
	p.stdout.expect(t, "ready")
	for _, s := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGINT, syscall.SIGTERM} {
		p.signal(t, s)
		if got := p.stdout.next(t); got != sigName(s) {
			t.Fatalf("sent %s to rlock; the command reported %q", sigName(s), got)
		}
	}
	if code := p.wait(t); code != 0 { // the helper exits 0 on SIGTERM
		t.Fatalf("exit %d", code)
	}
	p.stderr.nextEvent(t, "released")
	if n, _ := hgetallLen(t, srv, "job"); n != 0 {
		t.Fatal("lock not released")
	}
}

func TestE2ECtrlCWhileWaitingGivesUpCleanly(t *testing.T) {
	srv := redistest.Start(t)
	holder := startRlock(t, srv, execArgs(nil, "job", holdCmd(t, filepath.Join(t.TempDir(), "runs"), "A", ""))...)
	holder.stdout.expect(t, "holding")
	marker := filepath.Join(t.TempDir(), "ran")
	p := startRlock(t, srv, execArgs(nil, "job", helper(t, "touch", marker))...)
	p.stderr.nextEvent(t, "waiting")
	p.signal(t, syscall.SIGINT)
	if code := p.wait(t); code != 128+int(syscall.SIGINT) {
		t.Fatalf("exit %d, want %d", code, 128+int(syscall.SIGINT))
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the command ran")
	}
	holder.closeStdin()
	if code := holder.wait(t); code != 0 {
		t.Fatalf("holder exited %d", code)
	}
	// The interrupted waiter took nothing: the name is free.
	if code, _, _ := runRlock(t, srv, "status", "job"); code != exitNo {
		t.Fatalf("status exit %d, want %d (free)", code, exitNo)
	}
}

func TestE2ELockStatusUnlock(t *testing.T) {
	srv := redistest.Start(t)
	code, out, _ := runRlock(t, srv, "lock", "-hold", "5s", "deploy")
	if code != 0 || len(out) != 1 {
		t.Fatalf("lock: %d %q", code, out)
	}
	owner := out[0]
	code, out, _ = runRlock(t, srv, "-json", "status", "deploy")
	st := parseEvent(t, joined(out))
	owners, _ := st["owners"].([]any)
	ttl, _ := st.num("ttl_ms")
	if code != 0 || st["locked"] != true || len(owners) != 1 || owners[0].(map[string]any)["owner"] != owner ||
		owners[0].(map[string]any)["holds"] != 1.0 || ttl <= 0 || ttl > 5000 {
		t.Fatalf("status: %d %v", code, st)
	}
	// Re-enter as the same owner: two holds; one unlock leaves one.
	if code, out, _ := runRlock(t, srv, "lock", "-hold", "5s", "-wait", "0", "-owner", owner, "deploy"); code != 0 || joined(out) != owner {
		t.Fatalf("re-entry: %d %q", code, out)
	}
	if code, out, _ := runRlock(t, srv, "-json", "unlock", "-owner", owner, "deploy"); code != 0 ||
		parseEvent(t, joined(out))["holds_left"] != 1.0 {
		t.Fatalf("unlock: %d %q", code, out)
	}
	if code, _, _ := runRlock(t, srv, "unlock", "-owner", owner, "deploy"); code != 0 {
		t.Fatalf("second unlock: %d", code)
	}
	if code, _, errs := runRlock(t, srv, "unlock", "-owner", owner, "deploy"); code != exitNo {
		t.Fatalf("third unlock: %d %q", code, errs)
	}
	if code, out, _ := runRlock(t, srv, "status", "deploy"); code != exitNo || joined(out) != "deploy: free" {
		t.Fatalf("status after: %d %q", code, out)
	}
}

// hgetallLen returns the number of fields of key's hash.
func hgetallLen(t *testing.T, srv *redistest.Server, key string) (int, map[string]string) {
	t.Helper()
	m, err := srv.DoMap(ctxTest(t), "HGETALL", key)
	if err != nil {
		t.Fatalf("HGETALL %s: %v", key, err)
	}
	return len(m), m
}

// The command can take the same lock again through RLOCK_OWNER: a nested rlock exec re-enters instead of waiting
// for its parent forever.
func TestE2ENestedExecReentersThroughRLOCKOWNER(t *testing.T) {
	srv := redistest.Start(t)
	file := filepath.Join(t.TempDir(), "runs")
	inner := `exec "$0" exec -wait 0 -owner "$RLOCK_OWNER" job -- "$@"`
	p := startRlock(t, srv, append([]string{"exec", "job", "--", "sh", "-c", inner, rlockBinary(t)}, holdCmd(t, file, "inner", "")...)...)
	p.stdout.expect(t, "holding")
	if n, m := hgetallLen(t, srv, "job"); n != 1 || !slices.Equal(slices.Collect(maps.Values(m)), []string{"2"}) {
		t.Fatalf("lock hash %v: want one owner with 2 holds", m)
	}
	p.closeStdin()
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d: %s", code, joined(p.stderr.rest(t)))
	}
	if n, _ := hgetallLen(t, srv, "job"); n != 0 {
		t.Fatal("lock left behind")
	}
}

// The server stops answering (SIGSTOP) while the command runs, and the command finishes with status 0 within its
// lease: rlock exits 0, the command's status; the release that cannot get through is a warning.
func TestE2ECommandThatEndedUnderTheLockKeepsItsStatusWhenTheReleaseFails(t *testing.T) {
	srv := redistest.Start(t)
	p := startRlock(t, nil, append([]string{"-addr", srv.URL() + "?read_timeout=300ms&dial_timeout=500ms"},
		execArgs([]string{"-watchdog", "2s"}, "job", holdCmd(t, filepath.Join(t.TempDir(), "runs"), "A", ""))...)...)
	p.stdout.expect(t, "holding")
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Resume() })
	p.closeStdin() // the command ends, with status 0, well within its 2s lease
	if code := p.wait(t); code != 0 {
		t.Fatalf("rlock exited %d, want the command's 0:\n%s", code, joined(p.stderr.rest(t)))
	}
	events := p.stderr.rest(t)
	if got := eventNames(t, events); !slices.Contains(got, "release_failed") || slices.Contains(got, "lost") ||
		slices.Contains(got, "error") {
		t.Fatalf("events %v:\n%s", got, joined(events))
	}
}

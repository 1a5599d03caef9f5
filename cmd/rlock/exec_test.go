//go:build unix

package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/rlock"
)

// eventNames returns the "event" of each JSON line.
func eventNames(t *testing.T, lines []string) []string {
	t.Helper()
	var names []string
	for _, l := range lines {
		names = append(names, parseEvent(t, l).str("event"))
	}
	return names
}

func findEvent(t *testing.T, lines []string, name string) jsonEvent {
	t.Helper()
	for _, l := range lines {
		if e := parseEvent(t, l); e.str("event") == name {
			return e
		}
	}
	t.Fatalf("no %q event in:\n%s", name, joined(lines))
	return nil
}

func TestExecExitsWithTheCommandsStatusAndReleases(t *testing.T) {
	for _, status := range []string{"0", "7", "255"} {
		t.Run(status, func(t *testing.T) {
			h := newHarness(t)
			args := append([]string{"-json", "exec", "job", "--"}, helper(t, "exit", status)...)
			code, _, events := h.runSync(t, args...)
			if want := map[string]int{"0": 0, "7": 7, "255": 255}[status]; code != want {
				t.Fatalf("exit code %d, want %d; events:\n%s", code, want, joined(events))
			}
			if got, want := eventNames(t, events), []string{"acquired", "started", "exited", "released"}; !slices.Equal(got, want) {
				t.Fatalf("events %v, want %v", got, want)
			}
			if ec, _ := findEvent(t, events, "exited").num("exit_code"); int(ec) != code {
				t.Fatalf("exited event has exit_code %v, want %d", ec, code)
			}
			if s := h.fake.snapshot(); s != "" {
				t.Fatalf("lock still held after exec: %s", s)
			}
			if _, rel := h.fake.counts(); rel != 1 {
				t.Fatalf("%d releases, want 1", rel)
			}
		})
	}
}

func TestExecQuietByDefault(t *testing.T) {
	h := newHarness(t)
	code, out, errs := h.runSync(t, append([]string{"exec", "job", "--"}, helper(t, "exit", "0")...)...)
	if code != 0 || len(out) != 0 || len(errs) != 0 {
		t.Fatalf("code %d, stdout %q, stderr %q: a successful run must print nothing (cron mails any output)", code, out, errs)
	}
}

func TestExecVerboseNarratesInEnglish(t *testing.T) {
	h := newHarness(t)
	code, _, errs := h.runSync(t, append([]string{"-v", "exec", "job", "--"}, helper(t, "exit", "3")...)...)
	if code != 3 {
		t.Fatalf("code %d, want 3", code)
	}
	all := joined(errs)
	for _, want := range []string{"rlock: acquired job as fake-uuid:1 at once", "rlock: started", "exited with status 3", "rlock: released job"} {
		if !strings.Contains(all, want) {
			t.Errorf("stderr lacks %q:\n%s", want, all)
		}
	}
}

func TestExecCommandKilledBySignalGives128PlusN(t *testing.T) {
	h := newHarness(t)
	code, _, events := h.runSync(t, append([]string{"-json", "exec", "job", "--"}, helper(t, "selfkill")...)...)
	if code != 128+int(syscall.SIGKILL) {
		t.Fatalf("code %d, want %d", code, 128+int(syscall.SIGKILL))
	}
	if s := findEvent(t, events, "exited").str("signal"); s != "SIGKILL" {
		t.Fatalf("exited event signal %q, want SIGKILL", s)
	}
	if h.fake.snapshot() != "" {
		t.Fatal("lock still held")
	}
}

func TestExecCommandNotFoundOrNotExecutableTakesNoLock(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd  string
		code int
		msg  string
	}{
		{"no-such-command-rlock-test", exitNotFound, "command not found"},
		{filepath.Join(dir, "missing"), exitNotFound, "command not found"},
		{plain, exitCannotExec, "cannot execute"},
		{dir, exitCannotExec, "cannot execute"},
	} {
		t.Run(filepath.Base(tc.cmd), func(t *testing.T) {
			h := newHarness(t)
			code, _, errs := h.runSync(t, "exec", "job", "--", tc.cmd)
			if code != tc.code || !strings.Contains(joined(errs), tc.msg) {
				t.Fatalf("code %d, stderr %q; want %d and %q", code, errs, tc.code, tc.msg)
			}
			if h.dialCount() != 0 {
				t.Fatal("rlock connected to Redis for a command it cannot run")
			}
		})
	}
}

func TestExecUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"exec"}, "missing lock NAME"},
		{[]string{"exec", "job"}, "missing COMMAND"},
		{[]string{"exec", "job", "--"}, "missing COMMAND"},
		{[]string{"exec", "", "--", "true"}, "must not be empty"},
		{[]string{"exec", "job", "-wait", "1s", "--", "true"}, "flags go before NAME"},
		{[]string{"exec", "-wait", "soon", "job", "--", "true"}, "want a duration"},
		{[]string{"exec", "-wait", "-1s", "job", "--", "true"}, "must not be negative"},
		{[]string{"exec", "-lease", "-1s", "job", "--", "true"}, "-lease"},
		{[]string{"exec", "-lease", "10us", "job", "--", "true"}, "-lease"},
		{[]string{"exec", "-grace", "-1s", "job", "--", "true"}, "-grace"},
		{[]string{"exec", "-grace", "20s", "job", "--", "true"}, "-grace 20s does not fit in the 30s lease (-watchdog)"},
		{[]string{"exec", "-watchdog", "3s", "-grace", "2s", "job", "--", "true"}, "at most half of -watchdog (1.5s)"},
		{[]string{"exec", "-lease", "2s", "-grace", "1500ms", "job", "--", "true"}, "at most half of -lease (1s)"},
		{[]string{"exec", "-watchdog", "0", "job", "--", "true"}, "-watchdog"},
		{[]string{"exec", "-owner", "nobody", "job", "--", "true"}, "UUID:N"},
		{[]string{"exec", "-owner", "abc:x1", "job", "--", "true"}, "decimal"},
		{[]string{"exec", "-bogus", "job", "--", "true"}, "flag provided but not defined"},
		{[]string{"frobnicate"}, "unknown command"},
		{nil, "Usage: rlock"},
		{[]string{"status"}, "missing lock NAME"},
		{[]string{"status", "a", "b"}, "unexpected arguments"},
		{[]string{"lock", "job"}, "-hold"},
		{[]string{"unlock", "job"}, "-owner is required"},
		{[]string{"-addr", "http://x", "status", "job"}, "invalid -addr"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			h := newHarness(t)
			code, _, errs := h.runSync(t, tc.args...)
			if code != exitUsage || !strings.Contains(joined(errs), tc.msg) {
				t.Fatalf("code %d, stderr:\n%s\nwant %d and %q", code, joined(errs), exitUsage, tc.msg)
			}
			if h.dialCount() != 0 {
				t.Fatal("a usage error connected to Redis")
			}
		})
	}
}

func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"help"}, {"exec", "-h"}, {"status", "-help"}} {
		h := newHarness(t)
		code, out, errs := h.runSync(t, args...)
		if code != 0 || !strings.Contains(joined(out)+joined(errs), "Usage: rlock") {
			t.Fatalf("%v: code %d, output %q %q", args, code, out, errs)
		}
	}
}

func TestExecTimesOutWithoutRunningTheCommand(t *testing.T) {
	h := newHarness(t)
	h.fake.hold("job", "java-uuid:42")
	marker := filepath.Join(t.TempDir(), "ran")
	code, _, events := h.runSync(t, append([]string{"-json", "exec", "-wait", "50ms", "job", "--"}, helper(t, "touch", marker)...)...)
	if code != exitNotAcquired {
		t.Fatalf("code %d, want %d; events:\n%s", code, exitNotAcquired, joined(events))
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the command ran although the lock was not acquired (stat: %v)", err)
	}
	if got, want := eventNames(t, events), []string{"waiting", "timeout"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	e := findEvent(t, events, "timeout")
	if owners, _ := e["owners"].([]any); len(owners) != 1 || owners[0].(map[string]any)["owner"] != "java-uuid:42" {
		t.Fatalf("timeout event does not name the holder: %v", e)
	}
	if h.fake.snapshot() != "job=java-uuid:42*1" {
		t.Fatalf("the holder's lock changed: %s", h.fake.snapshot())
	}
}

func TestExecWaitZeroMakesOneAttempt(t *testing.T) {
	h := newHarness(t)
	h.fake.hold("job", "other:1")
	code, _, errs := h.runSync(t, append([]string{"exec", "-wait", "0", "job", "--"}, helper(t, "exit", "0")...)...)
	if code != exitNotAcquired {
		t.Fatalf("code %d, want %d", code, exitNotAcquired)
	}
	if msg := joined(errs); !strings.Contains(msg, "could not acquire job within 0s: it is held by other:1 (1 hold)") {
		t.Fatalf("message does not say who holds the lock: %q", msg)
	}
}

func TestExecQuietBusyLockPrintsNothing(t *testing.T) {
	h := newHarness(t)
	h.fake.hold("job", "other:1")
	code, out, errs := h.runSync(t, append([]string{"exec", "-wait", "0", "-q", "job", "--"}, helper(t, "exit", "0")...)...)
	if code != exitNotAcquired || len(out)+len(errs) != 0 {
		t.Fatalf("code %d, stdout %q, stderr %q; want %d and no output", code, out, errs, exitNotAcquired)
	}
	// Errors are still reported.
	h = newHarness(t)
	h.fake.statusErr = errors.New("unused")
	h.dialFn = func(rlock.Config) (locker, error) {
		return nil, &conn.ConnError{Addr: "x:1", Op: "connect", Err: conn.ErrTimeout}
	}
	if code, _, errs := h.runSync(t, "exec", "-q", "job", "--", "true"); code != exitUnavailable || len(errs) == 0 {
		t.Fatalf("code %d, stderr %q: -q must not hide errors", code, errs)
	}
}

func TestExecWaitsForTheHolderThenRuns(t *testing.T) {
	h := newHarness(t)
	h.fake.hold("job", "other:1")
	r := h.start(t, append([]string{"-json", "exec", "job", "--"}, helper(t, "exit", "0")...)...)
	w := h.stderr.nextEvent(t, "waiting")
	if n, _ := w.num("wait_ms"); n != -1 {
		t.Fatalf("waiting event wait_ms %v, want -1 (forever)", n)
	}
	h.fake.lose("job", rlock.ErrReleased) // the holder releases
	if code := r.wait(t); code != 0 {
		t.Fatalf("code %d, want 0", code)
	}
	if got := eventNames(t, h.stderr.rest(t)); !slices.Equal(got, []string{"acquired", "started", "exited", "released"}) {
		t.Fatalf("events after waiting: %v", got)
	}
}

func TestExecSignalWhileWaitingGivesUp(t *testing.T) {
	h := newHarness(t)
	h.fake.hold("job", "other:1")
	marker := filepath.Join(t.TempDir(), "ran")
	r := h.start(t, append([]string{"-json", "exec", "job", "--"}, helper(t, "touch", marker)...)...)
	h.stderr.nextEvent(t, "waiting")
	r.signal(t, syscall.SIGUSR1) // ignored while waiting: nobody to forward it to
	r.signal(t, syscall.SIGINT)
	if code := r.wait(t); code != 128+int(syscall.SIGINT) {
		t.Fatalf("code %d, want %d", code, 128+int(syscall.SIGINT))
	}
	e := findEvent(t, h.stderr.rest(t), "interrupted")
	if e.str("signal") != "SIGINT" {
		t.Fatalf("interrupted event %v, want signal SIGINT", e)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the command ran after the wait was given up")
	}
	if acq, _ := h.fake.counts(); acq != 0 || h.fake.snapshot() != "job=other:1*1" {
		t.Fatalf("acquires %d, state %s: the interrupted wait changed the lock", acq, h.fake.snapshot())
	}
}

func TestExecForwardsSignalsToTheCommand(t *testing.T) {
	h := newHarness(t)
	r := h.start(t, append([]string{"-json", "exec", "job", "--"}, helper(t, "signals")...)...)
	h.stdout.expect(t, "ready")
	for _, s := range []os.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGINT, syscall.SIGTERM} {
		r.signal(t, s)
		if got := h.stdout.next(t); got != sigName(s) {
			t.Fatalf("the command reported %q after rlock got %s", got, sigName(s))
		}
	}
	if code := r.wait(t); code != 0 { // the helper exits 0 after SIGTERM
		t.Fatalf("code %d, want 0", code)
	}
	var forwarded []string
	for _, l := range h.stderr.rest(t) {
		if e := parseEvent(t, l); e.str("event") == "signal" {
			forwarded = append(forwarded, e.str("signal"))
		}
	}
	if want := []string{"SIGUSR1", "SIGUSR2", "SIGHUP", "SIGQUIT", "SIGINT", "SIGTERM"}; !slices.Equal(forwarded, want) {
		t.Fatalf("signal events %v, want %v", forwarded, want)
	}
}

func TestExecDoesNotForwardTerminalSignalsTwice(t *testing.T) {
	h := newHarness(t)
	h.terminal = func(s os.Signal) bool { return s == syscall.SIGINT }
	r := h.start(t, append([]string{"-json", "exec", "job", "--"}, helper(t, "signals")...)...)
	h.stdout.expect(t, "ready")
	r.signal(t, syscall.SIGINT) // the terminal already sent it to the command's group
	r.signal(t, syscall.SIGUSR1)
	if got := h.stdout.next(t); got != "SIGUSR1" {
		t.Fatalf("the command's first signal is %q, want SIGUSR1 (SIGINT must not be forwarded)", got)
	}
	r.signal(t, syscall.SIGTERM)
	if code := r.wait(t); code != 0 {
		t.Fatalf("code %d", code)
	}
	e := findEvent(t, h.stderr.rest(t), "signal")
	if e.str("signal") != "SIGINT" || e["from_terminal"] != true {
		t.Fatalf("first signal event %v, want SIGINT from_terminal", e)
	}
}

func TestExecLostLockStopsTheCommand(t *testing.T) {
	for _, tc := range []struct {
		cause error
		code  string
		text  string
	}{
		{rlock.ErrLockLost, "lock_lost", "Redis no longer holds it"},
		{rlock.ErrLeaseExpired, "lease_expired", "no renewal was confirmed"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			h := newHarness(t)
			r := h.start(t, append([]string{"-json", "exec", "job", "--"}, helper(t, "signals")...)...)
			h.stdout.expect(t, "ready")
			h.fake.lose("job", tc.cause)
			if got := h.stdout.next(t); got != "SIGTERM" {
				t.Fatalf("the command got %q, want SIGTERM", got)
			}
			if code := r.wait(t); code != exitLost {
				t.Fatalf("code %d, want %d (lost), although the command exited 0", code, exitLost)
			}
			events := h.stderr.rest(t)
			lost := findEvent(t, events, "lost")
			if lost.str("cause") != tc.code || lost.str("signal") != "SIGTERM" {
				t.Fatalf("lost event %v", lost)
			}
			if _, rel := h.fake.counts(); rel != 0 {
				t.Fatalf("%d releases of a lost lock, want 0", rel)
			}
			if slices.Contains(eventNames(t, events), "killed") {
				t.Fatal("SIGKILL sent to a command that stopped on SIGTERM")
			}
		})
	}
}

func TestExecLostLockKillsACommandThatIgnoresSIGTERM(t *testing.T) {
	h := newHarness(t)
	r := h.start(t, append([]string{"-v", "exec", "-grace", "100ms", "job", "--"}, helper(t, "ignore-term")...)...)
	h.stdout.expect(t, "ready")
	h.fake.lose("job", rlock.ErrLockLost)
	h.stdout.expect(t, "SIGTERM")
	if code := r.wait(t); code != exitLost {
		t.Fatalf("code %d, want %d", code, exitLost)
	}
	msg := joined(h.stderr.rest(t))
	for _, want := range []string{"lost the lock job", "sent SIGTERM", "sent SIGKILL", "was killed by SIGKILL", "exit 79"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
}

func TestExecLeaseIsPassedAndReported(t *testing.T) {
	h := newHarness(t)
	code, _, events := h.runSync(t, append([]string{"-json", "exec", "-lease", "2s", "-watchdog", "3s", "job", "--"}, helper(t, "exit", "0")...)...)
	if code != 0 {
		t.Fatalf("code %d", code)
	}
	e := findEvent(t, events, "acquired")
	if n, _ := e.num("lease_ms"); n != 2000 || e["watchdog"] != nil {
		t.Fatalf("acquired event %v, want lease_ms 2000 without watchdog", e)
	}
	if h.cfg.WatchdogTimeout.Seconds() != 3 {
		t.Fatalf("watchdog %v passed to the library, want 3s", h.cfg.WatchdogTimeout)
	}
}

// A command that ended while the lock was held exits with its own status even when the release then finds the
// lock gone (it expired or was force-unlocked after the last renewal): a warning, not exit 79.
func TestExecReleaseThatFindsTheLockGoneIsAWarning(t *testing.T) {
	h := newHarness(t)
	h.fake.releaseErr = rlock.ErrNotHeld
	code, _, events := h.runSync(t, append([]string{"-json", "exec", "job", "--"}, helper(t, "exit", "3")...)...)
	if code != 3 {
		t.Fatalf("code %d, want the command's 3", code)
	}
	if e := findEvent(t, events, "release_failed"); e.str("cause") != "not_held" {
		t.Fatalf("release_failed event %v", e)
	}
	if slices.Contains(eventNames(t, events), "lost") {
		t.Fatalf("a lost event for a release after the command ended:\n%s", joined(events))
	}
	h = newHarness(t)
	h.fake.releaseErr = rlock.ErrNotHeld
	_, _, errs := h.runSync(t, append([]string{"exec", "job", "--"}, helper(t, "exit", "0")...)...)
	if msg := joined(errs); len(errs) != 1 || !strings.Contains(msg, "warning: job was no longer held") {
		t.Fatalf("stderr %q", msg)
	}
}

func TestExecReleaseFailureKeepsTheCommandsStatus(t *testing.T) {
	h := newHarness(t)
	h.fake.releaseErr = &conn.ConnError{Addr: "127.0.0.1:6379", Op: "read", Err: conn.ErrConnLost}
	code, _, errs := h.runSync(t, append([]string{"exec", "job", "--"}, helper(t, "exit", "4")...)...)
	if code != 4 {
		t.Fatalf("code %d, want the command's 4", code)
	}
	if msg := joined(errs); !strings.Contains(msg, "could not release job") || !strings.Contains(msg, "frees itself when its lease ends") {
		t.Fatalf("stderr %q", msg)
	}
}

func TestExecGivesTheCommandItsLockInTheEnvironment(t *testing.T) {
	h := newHarness(t)
	code, out, _ := h.runSync(t, append([]string{"exec", "job", "--"}, helper(t, "env")...)...)
	if code != 0 || !slices.Equal(out, []string{"RLOCK_NAME=job", "RLOCK_OWNER=fake-uuid:1"}) {
		t.Fatalf("code %d, output %q", code, out)
	}
}

func TestExecWithOwnerReentersItsHold(t *testing.T) {
	h := newHarness(t)
	h.fake.hold("job", "0b5d0e8e-1111-2222-3333-444455556666:7")
	r := h.start(t, append([]string{"exec", "-wait", "0", "-owner", "0b5d0e8e-1111-2222-3333-444455556666:7", "job", "--"},
		helper(t, "signals")...)...)
	h.stdout.expect(t, "ready")
	if s := h.fake.snapshot(); s != "job=0b5d0e8e-1111-2222-3333-444455556666:7*2" {
		t.Fatalf("while the command runs: %s, want the pinned owner with 2 holds", s)
	}
	r.signal(t, syscall.SIGTERM)
	if code := r.wait(t); code != 0 {
		t.Fatalf("code %d", code)
	}
	if s := h.fake.snapshot(); s != "job=0b5d0e8e-1111-2222-3333-444455556666:7*1" {
		t.Fatalf("after: %s, want the outer hold kept", s)
	}
}

func TestExecConnectionFailureSaysWhatToDo(t *testing.T) {
	h := newHarness(t)
	h.dialFn = func(cfg rlock.Config) (locker, error) {
		return nil, &conn.ConnError{Addr: cfg.Conn.Addr, Op: "connect", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	}
	code, _, errs := h.runSync(t, "-addr", "redis://10.1.2.3:6380", "exec", "job", "--", "true")
	if code != exitUnavailable {
		t.Fatalf("code %d, want %d", code, exitUnavailable)
	}
	if msg := joined(errs); !strings.Contains(msg, "cannot connect to Redis at 10.1.2.3:6380") || !strings.Contains(msg, "Is redis-server running") {
		t.Fatalf("stderr %q", msg)
	}
}

// The default -grace is shortened to fit a short lease; the rule is about a -grace given explicitly.
func TestExecDefaultGraceFitsAShortLease(t *testing.T) {
	h := newHarness(t)
	r := h.start(t, append([]string{"-v", "exec", "-watchdog", "2s", "job", "--"}, helper(t, "ignore-term")...)...)
	h.stdout.expect(t, "ready")
	h.fake.lose("job", rlock.ErrLockLost)
	if code := r.wait(t); code != exitLost {
		t.Fatalf("code %d, want %d", code, exitLost)
	}
	if msg := joined(h.stderr.rest(t)); !strings.Contains(msg, "(SIGKILL in 1s)") {
		t.Fatalf("the grace is not half the 2s watchdog:\n%s", msg)
	}
}

//go:build unix

package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The kill deadline travels to the supervisor on the machine's monotonic clock: another process reads the same
// clock, between this process's readings before and after it ran.
func TestMachineMonotonicIsOneClockForEveryProcess(t *testing.T) {
	before, ok := machineMonotonic()
	if !ok {
		t.Skip("no monotonic clock shared by processes on this system: the deadline travels on the wall clock")
	}
	args := helper(t, "monoclock")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"=1", goraceEnv())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper monoclock: %v", err)
	}
	after, _ := machineMonotonic()
	child, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("helper monoclock printed %q", out)
	}
	if child < before || child > after {
		t.Fatalf("the child read %d, outside this process's readings %d..%d: not one clock", child, before, after)
	}
}

// killDeadline places the deadline on this process's clock: from the monotonic reading when given, else from the
// wall clock.
func TestKillDeadlinePrefersTheMonotonicClock(t *testing.T) {
	now, ok := machineMonotonic()
	if !ok {
		t.Skip("no monotonic clock shared by processes on this system")
	}
	// A wall-clock deadline an hour away that the monotonic one (2 s away) must override, as after a step of the
	// wall clock between rlock's reading and the supervisor's.
	got := time.Until(killDeadline(time.Now().Add(time.Hour).UnixNano(), now+int64(2*time.Second)))
	if got > 2*time.Second || got < time.Second {
		t.Fatalf("deadline in %v, want just under 2 s (the monotonic one)", got)
	}
	got = time.Until(killDeadline(time.Now().Add(3*time.Second).UnixNano(), 0))
	if got > 3*time.Second || got < 2*time.Second {
		t.Fatalf("deadline in %v without a monotonic reading, want just under 3 s (the wall clock's)", got)
	}
}

//go:build unix

package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// proc is one rlock process started by an end-to-end test, with its stdout and stderr on line streams and its
// stdin on a pipe the test holds (closing it ends a "hold" helper).
type proc struct {
	cmd    *exec.Cmd
	stdout *lineStream
	stderr *lineStream
	stdin  *os.File // write side; nil once closed
	exited chan struct{}
}

// startRlock starts the rlock binary with args, talking to srv through REDIS_URL (unless args set -addr). The
// process gets a session of its own (no controlling terminal, as under cron) and is killed if the test binary dies.
func startRlock(t *testing.T, srv *redistest.Server, args ...string) *proc {
	t.Helper()
	bin := rlockBinary(t)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{stdout: newLineStream(t), stderr: newLineStream(t), stdin: inW, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = inR, p.stdout.w, p.stderr.w
	p.cmd.Env = append(os.Environ(), helperEnv+"=1", goraceEnv())
	if srv != nil {
		p.cmd.Env = append(p.cmd.Env, "REDIS_URL="+srv.URL())
	}
	p.cmd.SysProcAttr = harnessProcAttr()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting rlock: %v", err)
	}
	// The child has its copies; ours must go, so the streams end when the process (and its command) exits.
	inR.Close()
	p.stdout.closeWriter()
	p.stderr.closeWriter()
	// Owner: the proc. Exits when the process exits; the cleanup kills it if the test left it running, and
	// waits.
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.closeStdin()
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

func (p *proc) closeStdin() {
	if p.stdin != nil {
		p.stdin.Close()
		p.stdin = nil
	}
}

// wait returns the exit code (-1 when killed by a signal), failing the test if the process does not exit within
// testTimeout.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(testTimeout):
		t.Fatalf("rlock %v did not exit within the test timeout", p.cmd.Args[1:])
	}
	return -1
}

// signal sends s to the rlock process (not to its command).
func (p *proc) signal(t *testing.T, s syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(s); err != nil {
		t.Fatalf("signal %v: %v", s, err)
	}
}

// runRlock runs rlock to the end and returns its exit code, stdout and stderr lines.
func runRlock(t *testing.T, srv *redistest.Server, args ...string) (int, []string, []string) {
	t.Helper()
	p := startRlock(t, srv, args...)
	code := p.wait(t)
	return code, p.stdout.rest(t), p.stderr.rest(t)
}

// ctxTest returns a context for admin commands, ended with the test.
func ctxTest(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// span is one command's run under the lock, as it recorded it.
type span struct {
	id         string
	start, end int64 // unix ns
}

// checkNoOverlap reads the file the "hold" helpers append to and proves mutual exclusion: in file order (appends
// are atomic and ordered by the kernel) every "start X" is followed by "end X" before any other start, and the
// timestamps never go back, so each run ended before the next one began. It returns the runs in order.
func checkNoOverlap(t *testing.T, path string) []span {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		spans []span
		open  *span
		last  int64
	)
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("line %d malformed: %q", i+1, line)
		}
		ts, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if ts < last {
			t.Fatalf("line %d: time goes back (%d < %d): runs overlapped:\n%s", i+1, ts, last, data)
		}
		last = ts
		switch f[0] {
		case "start":
			if open != nil {
				t.Fatalf("line %d: %s started while %s ran: the lock did not exclude:\n%s", i+1, f[1], open.id, data)
			}
			open = &span{id: f[1], start: ts}
		case "end":
			if open == nil || open.id != f[1] {
				t.Fatalf("line %d: end of %s without its start:\n%s", i+1, f[1], data)
			}
			open.end = ts
			spans = append(spans, *open)
			open = nil
		default:
			t.Fatalf("line %d malformed: %q", i+1, line)
		}
	}
	if open != nil {
		t.Fatalf("%s never ended:\n%s", open.id, data)
	}
	return spans
}

// holdCmd is the argv of the "hold" helper appending to file as id (holding for d, or until stdin ends if d is "").
func holdCmd(t *testing.T, file, id, d string) []string {
	args := []string{"hold", file, id}
	if d != "" {
		args = append(args, d)
	}
	return helper(t, args...)
}

// execArgs builds "[-json] exec FLAGS NAME -- CMD...".
func execArgs(flags []string, name string, cmd []string) []string {
	args := append([]string{"-json", "exec"}, flags...)
	args = append(args, name, "--")
	return append(args, cmd...)
}

// closedPort returns a loopback port with nothing listening on it.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

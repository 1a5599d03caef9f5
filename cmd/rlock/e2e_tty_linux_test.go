package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// openPTY opens a pseudo-terminal pair: the master for the test, the slave for rlock's standard streams.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	ioctl := func(req uintptr, arg unsafe.Pointer) {
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), req, uintptr(arg)); errno != 0 {
			m.Close()
			t.Skipf("pty ioctl %#x: %v", req, errno)
		}
	}
	var unlock int32
	ioctl(syscall.TIOCSPTLCK, unsafe.Pointer(&unlock))
	var n uint32
	ioctl(syscall.TIOCGPTN, unsafe.Pointer(&n))
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("opening the pty slave: %v", err)
	}
	return m, s
}

// ttyOutput collects what the processes on a terminal print, line by line.
type ttyOutput struct {
	lines chan string
	done  chan struct{}
}

func readTTY(t *testing.T, master *os.File) *ttyOutput {
	o := &ttyOutput{lines: make(chan string, 256), done: make(chan struct{})}
	// Owner: the test. Exits when reading the master fails (EIO once every slave descriptor is closed, or the
	// master closed in the cleanup); waited for there.
	go func() {
		defer close(o.done)
		defer close(o.lines)
		sc := bufio.NewScanner(master)
		for sc.Scan() {
			o.lines <- strings.TrimRight(sc.Text(), "\r")
		}
	}()
	t.Cleanup(func() {
		master.Close()
		<-o.done
	})
	return o
}

// waitFor reads lines until one contains s; it returns every line read.
func (o *ttyOutput) waitFor(t *testing.T, s string, seen []string) []string {
	t.Helper()
	for {
		select {
		case l, ok := <-o.lines:
			if !ok {
				t.Fatalf("terminal closed before %q; output:\n%s", s, joined(seen))
			}
			seen = append(seen, l)
			if strings.Contains(l, s) {
				return seen
			}
		case <-time.After(testTimeout):
			t.Fatalf("no %q on the terminal; output:\n%s", s, joined(seen))
		}
	}
}

// waitForLine is waitFor for a whole line (the terminal's "^C" echo aside), also among the lines already seen.
func (o *ttyOutput) waitForLine(t *testing.T, line string, seen []string) []string {
	t.Helper()
	for _, l := range seen {
		if strings.TrimPrefix(l, "^C") == line {
			return seen
		}
	}
	for {
		seen = o.waitFor(t, line, seen)
		if strings.TrimPrefix(seen[len(seen)-1], "^C") == line {
			return seen
		}
	}
}

// ttyRun is a process started as the session leader of a new pseudo-terminal, with the terminal as its standard
// streams: its process group is the terminal's foreground group, as a job a person starts from a shell.
type ttyRun struct {
	cmd    *exec.Cmd
	master *os.File
	out    *ttyOutput
	exited chan struct{}
}

// startOnTerminal starts argv on a new pseudo-terminal, talking to srv through REDIS_URL.
func startOnTerminal(t *testing.T, srv *redistest.Server, argv []string) *ttyRun {
	t.Helper()
	master, slave := openPTY(t)
	r := &ttyRun{master: master, out: readTTY(t, master), exited: make(chan struct{})}
	r.cmd = exec.Command(argv[0], argv[1:]...)
	r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = slave, slave, slave
	r.cmd.Env = append(os.Environ(), helperEnv+"=1", goraceEnv(), "REDIS_URL="+srv.URL())
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	// Owner: the test. Exits with the process; received in wait or in the cleanup (which kills it first).
	go func() {
		_ = r.cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			_ = r.cmd.Process.Kill()
			<-r.exited
		}
	})
	return r
}

// wait returns the process's exit code.
func (r *ttyRun) wait(t *testing.T, seen []string) int {
	t.Helper()
	select {
	case <-r.exited:
	case <-time.After(testTimeout):
		t.Fatalf("%s did not exit; output:\n%s", r.cmd.Args[0], joined(seen))
	}
	return r.cmd.ProcessState.ExitCode()
}

// Ctrl-C on a terminal reaches the command once: the command's process group is the terminal's foreground group,
// so the terminal signals it, and rlock, in the background, gets no copy to forward. A signal sent to rlock is
// forwarded.
func TestE2ECtrlCOnATerminalReachesTheCommandOnce(t *testing.T) {
	srv := redistest.Start(t)
	r := startOnTerminal(t, srv, append([]string{rlockBinary(t), "-v", "exec", "job", "--"}, helper(t, "signals")...))
	seen := r.out.waitFor(t, "ready", nil)
	if _, err := r.master.Write([]byte{0x03}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	seen = r.out.waitForLine(t, "SIGINT", seen)
	if err := r.cmd.Process.Signal(syscall.SIGUSR1); err != nil { // to rlock alone: forwarded
		t.Fatal(err)
	}
	seen = r.out.waitFor(t, "forwarded SIGUSR1", seen)
	// Wait until the command itself reported SIGUSR1 before sending SIGTERM: two signals pending on a
	// multi-threaded process may be taken by two threads and reach its signal channel in either order, and the
	// helper exits on SIGTERM (a clean-clone CI run lost SIGUSR1 that way).
	seen = r.out.waitForLine(t, "SIGUSR1", seen)
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	seen = r.out.waitFor(t, "released job", seen)
	if code := r.wait(t, seen); code != 0 {
		t.Fatalf("exit %d; output:\n%s", code, joined(seen))
	}
	count := map[string]int{}
	for _, l := range seen {
		count[strings.TrimPrefix(l, "^C")]++ // the terminal echoes ^C before the command's line
	}
	if count["SIGINT"] != 1 || count["SIGUSR1"] != 1 || count["SIGTERM"] != 1 {
		t.Fatalf("the command reported SIGINT %d, SIGUSR1 %d, SIGTERM %d times, want once each; output:\n%s",
			count["SIGINT"], count["SIGUSR1"], count["SIGTERM"], joined(seen))
	}
}

// Ctrl-Z stops the command's group, which holds the terminal; the shell would regain the terminal only if rlock
// stopped too, and then nothing would renew the lock. The supervisor continues the command at once, rlock says
// why, and the terminal still works: Ctrl-C reaches the command.
func TestE2ECtrlZDoesNotLeaveTheTerminalStuck(t *testing.T) {
	srv := redistest.Start(t)
	r := startOnTerminal(t, srv, append([]string{rlockBinary(t), "exec", "job", "--"}, helper(t, "signals")...))
	seen := r.out.waitFor(t, "ready", nil)
	if _, err := r.master.Write([]byte{0x1a}); err != nil { // Ctrl-Z
		t.Fatal(err)
	}
	seen = r.out.waitFor(t, "SIGTSTP stopped", seen)
	if _, err := r.master.Write([]byte{0x03}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	seen = r.out.waitForLine(t, "SIGINT", seen)
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t, seen); code != 0 {
		t.Fatalf("exit %d; output:\n%s", code, joined(seen))
	}
}

// An interactive command keeps the terminal: its process group becomes the terminal's foreground group, so it can
// read from it (a background group that reads is stopped by SIGTTIN), and rlock's group gets the terminal back
// when the command is done. A "shell" helper runs rlock as its foreground job and checks the latter.
func TestE2EInteractiveCommandHasTheTerminalAndRlockGetsItBack(t *testing.T) {
	srv := redistest.Start(t)
	r := startOnTerminal(t, srv, helper(t, append([]string{"jobshell", rlockBinary(t), "exec", "job", "--"},
		helper(t, "readline")...)...))
	seen := r.out.waitFor(t, "ready", nil)
	if _, err := r.master.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	seen = r.out.waitFor(t, "got: hello", seen)
	seen = r.out.waitFor(t, "foreground", seen)
	if last := seen[len(seen)-1]; last != "foreground restored" {
		t.Fatalf("after rlock: %q; output:\n%s", last, joined(seen))
	}
	r.wait(t, seen)
}

// rlock started in the background of its terminal: the command stays in the background, and stops (SIGTTIN) when
// it reads the terminal, as any background job. When the shell brings rlock to the foreground (fg: the terminal
// to rlock's group, then SIGCONT), rlock passes both on: the command's group gets the terminal, is continued, and
// reads.
func TestE2EBackgroundCommandGetsTheTerminalOnFg(t *testing.T) {
	srv := redistest.Start(t)
	r := startOnTerminal(t, srv, helper(t, append([]string{"bgjob", rlockBinary(t), "exec", "job", "--"},
		helper(t, "readline")...)...))
	seen := r.out.waitFor(t, "ready", nil)
	pid := strings.Fields(seen[len(seen)-1])[1]
	// The command reads the terminal from the background: SIGTTIN stops it. No event says so; its state does.
	for deadline := time.Now().Add(testTimeout); ; time.Sleep(10 * time.Millisecond) {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); f[0] == "T" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command (pid %s) did not stop reading from the background: %s", pid, stat)
		}
	}
	if err := r.cmd.Process.Signal(syscall.SIGUSR1); err != nil { // the shell's fg
		t.Fatal(err)
	}
	if _, err := r.master.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	seen = r.out.waitFor(t, "got: hello", seen)
	seen = r.out.waitFor(t, "job done", seen)
	r.wait(t, seen)
}

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

// Ctrl-C on a terminal reaches the command once: the command's process group is the terminal's foreground group,
// so the terminal signals it, and rlock, in the background, gets no copy to forward. A signal sent to rlock is
// forwarded.
func TestE2ECtrlCOnATerminalReachesTheCommandOnce(t *testing.T) {
	srv := redistest.Start(t)
	master, slave := openPTY(t)
	out := readTTY(t, master)
	cmd := exec.Command(rlockBinary(t), append([]string{"-v", "exec", "job", "--"}, helper(t, "signals")...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.Env = append(os.Environ(), helperEnv+"=1", goraceEnv(), "REDIS_URL="+srv.URL())
	// A session of its own with the pty as controlling terminal: rlock is the foreground process group, as when a
	// person runs it from a shell.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	exited := make(chan struct{})
	// Owner: this test. Exits with the process; received below or in the cleanup (which kills it first).
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	seen := out.waitFor(t, "ready", nil)
	if _, err := master.Write([]byte{0x03}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	seen = out.waitForLine(t, "SIGINT", seen)                   // to the command's group, which has the terminal, not to rlock
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil { // to rlock alone: forwarded
		t.Fatal(err)
	}
	seen = out.waitFor(t, "forwarded SIGUSR1", seen)
	// Wait until the command itself reported SIGUSR1 before sending SIGTERM: two signals pending on a
	// multi-threaded process may be taken by two threads and reach its signal channel in either order, and the
	// helper exits on SIGTERM (a clean-clone CI run lost SIGUSR1 that way).
	seen = out.waitForLine(t, "SIGUSR1", seen)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	seen = out.waitFor(t, "released job", seen)
	select {
	case <-exited:
	case <-time.After(testTimeout):
		t.Fatal("rlock did not exit")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
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

// An interactive command keeps the terminal: its process group becomes the terminal's foreground group, so it can
// read from it (a background group that reads is stopped by SIGTTIN), and rlock's group gets the terminal back
// when the command is done. A "shell" helper runs rlock as its foreground job and checks the latter.
func TestE2EInteractiveCommandHasTheTerminalAndRlockGetsItBack(t *testing.T) {
	srv := redistest.Start(t)
	master, slave := openPTY(t)
	out := readTTY(t, master)
	shell := helper(t, append([]string{"jobshell", rlockBinary(t), "exec", "job", "--"}, helper(t, "readline")...)...)
	cmd := exec.Command(shell[0], shell[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.Env = append(os.Environ(), helperEnv+"=1", goraceEnv(), "REDIS_URL="+srv.URL())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	exited := make(chan struct{})
	// Owner: this test. Exits with the process; received below or in the cleanup (which kills it first).
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	seen := out.waitFor(t, "ready", nil)
	if _, err := master.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	seen = out.waitFor(t, "got: hello", seen)
	seen = out.waitFor(t, "foreground", seen)
	if last := seen[len(seen)-1]; last != "foreground restored" {
		t.Fatalf("after rlock: %q; output:\n%s", last, joined(seen))
	}
	select {
	case <-exited:
	case <-time.After(testTimeout):
		t.Fatal("the shell helper did not exit")
	}
}

//go:build unix

// Every test file of this package is built for Unix only: the tests run rlock and its commands as Unix processes
// (process groups, sessions, signals, terminals). On Windows only the binary builds.

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// helperEnv selects the helper mode of the test binary: the commands the tests run under rlock are this binary,
// re-executed with the variable set, so that they behave exactly as the test needs (report the signals they get,
// ignore SIGTERM, append timestamped lines) without depending on a shell's trap semantics.
const helperEnv = "RLOCK_TEST_HELPER"

// TestMain runs the helper when asked to, and otherwise the tests, failing the run if a test leaves a goroutine
// behind. gnet's worker pool starts its goroutines at package init (rlock imports conn, which imports gnet): they
// are not ours, and IgnoreCurrent takes them out. The rlock binary built for the end-to-end tests is removed at the
// end.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == supervisorArg { // rlock exec, run in process, starts this binary as its supervisor
		os.Exit(supervisorMain(os.Args[2:]))
	}
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain(os.Args[1:]))
	}
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent(), goleak.Cleanup(func(code int) {
		removeBuiltBinary()
		os.Exit(code)
	}))
}

// helperMain is the command the tests run under rlock. Modes:
//
//	exit N              exit with status N
//	selfkill            kill itself with SIGKILL
//	signals             print "ready", then the name of each caught signal; exit 0 after SIGTERM
//	ignore-term         print "ready", then the name of each caught signal; never exit on its own
//	env                 print RLOCK_NAME and RLOCK_OWNER
//	touch FILE          create FILE
//	hold FILE ID [D]    append "start ID <unix ns>" to FILE, print "holding", wait until stdin ends (or for D),
//	                    append "end ID <ns>"
//	tree FILE ID        ignore SIGTERM, start a child "tick FILE ID.child" (which ignores it too), print
//	                    "ready PID CHILDPID" once the child ticks, then append "tick ID PID <ns>" to FILE every
//	                    tickEvery, forever
//	tick FILE ID        ignore SIGTERM, print "ready", append "tick ID PID <ns>" every tickEvery, forever
//	mark FILE ID        append "start ID PID <ns>" to FILE
//	monoclock           print the machine's monotonic clock in ns (machineMonotonic), or "none"
//	readline            print "ready PID", read a line from stdin, print "got: LINE"
//	jobshell ARGS...    run ARGS as a child in this process group (a shell's foreground job), then print
//	                    "foreground restored" if this group is the terminal's foreground group again
//	bgjob ARGS...       run ARGS as a background job (a process group of its own, not the terminal's); on
//	                    SIGUSR1 bring it to the foreground as a shell's fg does (tcsetpgrp, SIGCONT), wait for it,
//	                    print "job done"
func helperMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "helper: no mode")
		return 2
	}
	switch args[0] {
	case "exit":
		n, _ := strconv.Atoi(args[1])
		return n
	case "selfkill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	case "signals", "ignore-term":
		c := make(chan os.Signal, 16)
		signal.Notify(c, forwardedSignals...)
		fmt.Println("ready")
		for s := range c {
			fmt.Println(sigName(s))
			if s == syscall.SIGTERM && args[0] == "signals" {
				return 0
			}
		}
	case "env":
		fmt.Printf("RLOCK_NAME=%s\nRLOCK_OWNER=%s\n", os.Getenv("RLOCK_NAME"), os.Getenv("RLOCK_OWNER"))
		return 0
	case "touch":
		if err := os.WriteFile(args[1], nil, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 2
		}
		return 0
	case "hold":
		return helperHold(args[1:])
	case "tree", "tick":
		return helperTick(args[0], args[1], args[2])
	case "mark":
		return appendLine(args[1], fmt.Sprintf("start %s %d %d\n", args[2], os.Getpid(), time.Now().UnixNano()))
	case "monoclock":
		if now, ok := machineMonotonic(); ok {
			fmt.Println(now)
		} else {
			fmt.Println("none")
		}
		return 0
	case "readline":
		fmt.Println("ready", os.Getpid())
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil {
			fmt.Println("read error:", err)
			return 2
		}
		fmt.Printf("got: %s", line)
		return 0
	case "jobshell":
		return helperJobShell(args[1:])
	case "bgjob":
		return helperBackgroundJob(args[1:])
	}
	fmt.Fprintln(os.Stderr, "helper: unknown mode", args[0])
	return 2
}

// tickEvery is how often the tick helpers write their line.
const tickEvery = 5 * time.Millisecond

// helperTick is the tree and tick modes: processes that ignore SIGTERM and leave a timestamped trace of being
// alive, so that a test can prove from their own output when they stopped.
func helperTick(mode, file, id string) int {
	signal.Ignore(syscall.SIGTERM) // inherited by the child: both need SIGKILL
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	tick := func() { fmt.Fprintf(f, "tick %s %d %d\n", id, os.Getpid(), time.Now().UnixNano()) }
	if mode == "tree" {
		self, _ := os.Executable()
		child := exec.Command(self, "tick", file, id+".child")
		out, err := child.StdoutPipe()
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 2
		}
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 2
		}
		if l, _ := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
			fmt.Fprintf(os.Stderr, "helper: child said %q\n", l)
			return 2
		}
		tick()
		fmt.Printf("ready %d %d\n", os.Getpid(), child.Process.Pid)
	} else {
		tick()
		fmt.Println("ready")
	}
	for {
		time.Sleep(tickEvery) // the work that goes on until the process is killed
		tick()
	}
}

// appendLine appends line to file in one write.
func appendLine(file, line string) int {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.WriteString(line)
		f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	return 0
}

// helperJobShell runs its arguments as a shell runs a foreground job in its own process group (here the
// helper's, which the test made the terminal's foreground group), waits, and says whether the group got the
// terminal back.
func helperJobShell(args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Println("job:", err)
	}
	fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	if err == nil && fg == syscall.Getpgrp() {
		fmt.Println("foreground restored")
	} else {
		fmt.Printf("foreground not restored: %d, not %d (%v)\n", fg, syscall.Getpgrp(), err)
	}
	return 0
}

// helperBackgroundJob starts its arguments as a background job and brings it to the foreground on SIGUSR1.
func helperBackgroundJob(args []string) int {
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Println("job:", err)
		return 2
	}
	<-usr1
	if err := unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, cmd.Process.Pid); err != nil {
		fmt.Println("fg:", err)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
	_ = cmd.Wait()
	signal.Ignore(syscall.SIGTTOU) // take the terminal back from the background, as a shell does
	_ = unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, syscall.Getpgrp())
	fmt.Println("job done")
	return 0
}

// helperHold appends the start line, holds (stdin to EOF, or a duration), then appends the end line. Each line is
// one write on an O_APPEND descriptor, so lines of concurrent writers never mix.
func helperHold(args []string) int {
	f, err := os.OpenFile(args[0], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	defer f.Close()
	id := args[1]
	fmt.Fprintf(f, "start %s %d\n", id, time.Now().UnixNano())
	fmt.Println("holding")
	if len(args) > 2 {
		d, _ := time.ParseDuration(args[2])
		time.Sleep(d) // the work done under the lock: the time during which an overlap would show
	} else {
		_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	}
	fmt.Fprintf(f, "end %s %d\n", id, time.Now().UnixNano())
	return 0
}

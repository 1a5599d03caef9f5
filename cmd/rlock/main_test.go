package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
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
		if me, err := os.FindProcess(os.Getpid()); err == nil {
			_ = me.Kill() // SIGKILL on Unix
		}
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
	}
	fmt.Fprintln(os.Stderr, "helper: unknown mode", args[0])
	return 2
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

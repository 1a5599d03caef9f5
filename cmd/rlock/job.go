package main

import (
	"os"
	"time"
)

// job is the command running under the lock, as exec's supervision loop drives it. On Unix it is a supervisor
// process (job_unix.go) that keeps the command's whole process group in check even if rlock dies; on other
// systems, the command as a direct child (job_other.go). Its methods are called from one goroutine.
type job interface {
	// reports delivers what happens to the command, ending with jobDone (or jobVanished), then closes.
	reports() <-chan jobEvent
	// signal forwards s to the command's process group. It does not block.
	signal(s os.Signal)
	// stop makes the group stop: SIGTERM now, SIGKILL after the grace. It does not block.
	stop()
	// resume continues the group after rlock itself was continued (a shell's fg or bg), giving it the terminal
	// when rlock is in the foreground. It does not block.
	resume()
	// hasTerminal reports whether the command's group was given the controlling terminal.
	hasTerminal() bool
	// close waits for the supervision to end after jobDone and frees what it holds.
	close()
}

// jobSpec is what startJob runs and how.
type jobSpec struct {
	path                  string   // the command, resolved in PATH
	argv                  []string // its arguments, argv[0] as given
	env                   []string // its environment
	stdin, stdout, stderr *os.File
	grace                 time.Duration // SIGTERM to SIGKILL
	killBy                time.Time     // a fixed lease's last moment for SIGKILL; zero for the watchdog
	foreground            bool          // give the command's group the controlling terminal
}

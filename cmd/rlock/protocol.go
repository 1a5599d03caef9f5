package main

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// supervisorArg, as rlock's first argument, runs rlock as the supervisor of a command (supervisorMain). It is not
// a subcommand for people: rlock exec starts it.
const supervisorArg = "--rlock-internal-supervisor"

// The supervisor and rlock talk over two pipes, one line per message (see supervisor_unix.go). rlock writes the
// control pipe; the supervisor reads it, and reads its end — rlock died — as "stop everything". The supervisor
// writes the report pipe; rlock reads its end as "the supervisor exited".
const (
	ctlSignal = "signal" // rlock → supervisor: "signal N", send signal N to the command's process group
	ctlStop   = "stop"   // rlock → supervisor: the lock is lost; SIGTERM the group now, SIGKILL after the grace
	ctlCont   = "cont"   // rlock → supervisor: rlock was continued (fg or bg): continue the group, with the terminal on fg

	repStarted   = "started"   // "started PID": the command runs, as PID, leading its own process group
	repFailed    = "failed"    // "failed ERRNO": the command could not be started
	repTermLease = "termlease" // the fixed lease ends soon: the group got SIGTERM (SIGKILL follows before the end)
	repKilled    = "killed"    // the group outlived the grace after SIGTERM and got SIGKILL
	repExited    = "exited"    // "exited STATUS": the command exited with STATUS
	repSignaled  = "signaled"  // "signaled N": signal N killed the command
	repLeftovers = "leftovers" // processes of the group outlived the command: they got SIGTERM
	repResumed   = "resumed"   // "resumed N": signal N stopped the command while it had the terminal; it was continued
	repDone      = "done"      // the group is empty (and the terminal given back): nothing of the command runs
)

// jobEventKind says what a jobEvent reports.
type jobEventKind int

const (
	jobStarted   jobEventKind = iota // pid
	jobFailed                        // err: the command could not be started
	jobTermLease                     // the fixed lease ends soon: SIGTERM sent to the group
	jobKilled                        // SIGKILL sent to the group after the grace
	jobExited                        // status: the command ended
	jobLeftovers                     // processes of the group outlived the command and got SIGTERM
	jobResumed                       // signal (status.signal) stopped the command at the terminal; it was continued
	jobDone                          // the group is empty
	jobVanished                      // the supervisor died without saying done: rlock killed the group itself
)

// jobEvent is one report of the supervisor, parsed.
type jobEvent struct {
	kind   jobEventKind
	pid    int
	status cmdStatus
	err    error
}

// cmdStatus is how the command ended: with an exit status, or killed by a signal.
type cmdStatus struct {
	code   int            // the exit status, when signal is 0
	signal syscall.Signal // the signal that killed it, or 0
}

// parseReport parses one line of the report pipe.
func parseReport(line string) (jobEvent, error) {
	word, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	num := func() (int, error) {
		n, err := strconv.Atoi(arg)
		if err != nil {
			return 0, fmt.Errorf("supervisor report %q: %w", line, err)
		}
		return n, nil
	}
	switch word {
	case repStarted:
		n, err := num()
		return jobEvent{kind: jobStarted, pid: n}, err
	case repFailed:
		n, err := num()
		return jobEvent{kind: jobFailed, err: syscall.Errno(n)}, err
	case repTermLease:
		return jobEvent{kind: jobTermLease}, nil
	case repKilled:
		return jobEvent{kind: jobKilled}, nil
	case repExited:
		n, err := num()
		return jobEvent{kind: jobExited, status: cmdStatus{code: n}}, err
	case repSignaled:
		n, err := num()
		return jobEvent{kind: jobExited, status: cmdStatus{signal: syscall.Signal(n)}}, err
	case repLeftovers:
		return jobEvent{kind: jobLeftovers}, nil
	case repResumed:
		n, err := num()
		return jobEvent{kind: jobResumed, status: cmdStatus{signal: syscall.Signal(n)}}, err
	case repDone:
		return jobEvent{kind: jobDone}, nil
	}
	return jobEvent{}, fmt.Errorf("supervisor report %q: unknown", line)
}

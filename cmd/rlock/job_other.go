//go:build !unix

package main

import (
	"os"
	"os/exec"
	"time"
)

// directJob runs the command as a direct child, where there are no process groups to supervise (Windows): rlock
// stops the command itself (os.Process.Kill: Windows has no SIGTERM, so the grace does not apply) when the lock
// is lost or a fixed lease ends, but a dead rlock leaves it running, and processes it started are not stopped.
// Use a Unix system where that matters.
type directJob struct {
	cmd    *exec.Cmd
	events chan jobEvent
	kill   chan struct{} // closed by stop
}

// supervisorMain refuses: there is no supervisor process on this system.
func supervisorMain([]string) int { return exitUsage }

// terminalIsOurs reports false: the command shares rlock's console.
func terminalIsOurs() bool { return false }

// startJob starts the command. It does not block beyond starting it.
func startJob(spec jobSpec) (job, error) {
	cmd := &exec.Cmd{Path: spec.path, Args: spec.argv, Env: spec.env, Stdin: spec.stdin, Stdout: spec.stdout, Stderr: spec.stderr}
	j := &directJob{cmd: cmd, events: make(chan jobEvent, 8), kill: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		j.events <- jobEvent{kind: jobFailed, err: err}
		j.events <- jobEvent{kind: jobDone}
		close(j.events)
		return j, nil
	}
	j.events <- jobEvent{kind: jobStarted, pid: cmd.Process.Pid}
	// Owner: the job. Exits when the command has exited; close waits for it.
	go j.wait(spec)
	return j, nil
}

func (j *directJob) wait(spec jobSpec) {
	defer close(j.events)
	exited := make(chan struct{})
	// Owner: wait. Exits when the command exits, which the kill below brings about at the latest.
	go func() {
		_ = j.cmd.Wait()
		close(exited)
	}()
	var deadline <-chan time.Time
	if !spec.killBy.IsZero() {
		t := time.NewTimer(time.Until(spec.killBy))
		defer t.Stop()
		deadline = t.C
	}
	select {
	case <-exited:
	case <-deadline:
		j.events <- jobEvent{kind: jobTermLease}
		_ = j.cmd.Process.Kill()
		<-exited
	case <-j.kill:
		_ = j.cmd.Process.Kill()
		j.events <- jobEvent{kind: jobKilled}
		<-exited
	}
	j.events <- jobEvent{kind: jobExited, status: cmdStatus{code: j.cmd.ProcessState.ExitCode()}}
	j.events <- jobEvent{kind: jobDone}
}

func (j *directJob) reports() <-chan jobEvent { return j.events }

func (j *directJob) hasTerminal() bool { return false }

func (j *directJob) signal(s os.Signal) { _ = j.cmd.Process.Signal(s) }

func (j *directJob) stop() {
	select {
	case <-j.kill:
	default:
		close(j.kill)
	}
}

func (j *directJob) resume() {}

func (j *directJob) close() {
	for range j.events {
	}
}

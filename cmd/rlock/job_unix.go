//go:build unix

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// supervisedJob is the command run under a supervisor process (supervisor_unix.go), seen from rlock: reports
// come in on events, control messages go out on ctl.
type supervisedJob struct {
	cmd    *exec.Cmd     // the supervisor
	ctl    *os.File      // the write end of the control pipe; its end tells the supervisor that rlock is gone
	events chan jobEvent // closed when the report pipe ends (the supervisor exited)
	fg     bool          // the command's group was given the terminal
}

// startJob starts the supervisor, which starts the command. It does not block beyond starting a process.
func startJob(spec jobSpec) (job, error) {
	self, err := selfExecutable()
	if err != nil {
		return nil, fmt.Errorf("cannot find rlock's own executable to start the supervisor: %w", err)
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, err
	}
	args := []string{"rlock", supervisorArg, "-grace", spec.grace.String(), "-pgrp", strconv.Itoa(syscall.Getpgrp())}
	if !spec.killBy.IsZero() {
		args = append(args, "-kill-by", strconv.FormatInt(spec.killBy.UnixNano(), 10))
		if now, ok := machineMonotonic(); ok {
			args = append(args, "-kill-by-mono", strconv.FormatInt(now+int64(time.Until(spec.killBy)), 10))
		}
	}
	if spec.foreground {
		args = append(args, "-fg")
	}
	args = append(append(args, "--", spec.path), spec.argv...)
	cmd := &exec.Cmd{
		Path: self, Args: args, Env: spec.env,
		Stdin: spec.stdin, Stdout: spec.stdout, Stderr: spec.stderr, // *os.File: passed as they are, no copying
		ExtraFiles: []*os.File{ctlR, repW}, // fds 3 and 4
		// A process group of its own: signals for rlock's job (a shell's kill %1, Ctrl-C when rlock is in the
		// foreground) must not reach it. No Pdeathsig: it must outlive rlock.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	ctlR.Close() // the supervisor's ends: the pipes end when the supervisor, or rlock, exits
	repW.Close()
	if err != nil {
		ctlW.Close()
		repR.Close()
		return nil, fmt.Errorf("cannot start the supervisor (%s): %w", self, err)
	}
	j := &supervisedJob{cmd: cmd, ctl: ctlW, events: make(chan jobEvent, 16), fg: spec.foreground}
	if j.fg {
		// rlock now runs in the background of its terminal; with stty tostop a write of ours would stop rlock
		// (SIGTTOU) while the command runs. Ignored only now, after the supervisor started with the default.
		signal.Ignore(syscall.SIGTTOU)
	}
	// Owner: the job. Exits at the end of the report pipe, when the supervisor exits; close waits for it.
	go j.readReports(repR)
	return j, nil
}

func (j *supervisedJob) reports() <-chan jobEvent { return j.events }

func (j *supervisedJob) hasTerminal() bool { return j.fg }

func (j *supervisedJob) signal(s os.Signal) {
	if n, ok := s.(syscall.Signal); ok {
		_, _ = fmt.Fprintf(j.ctl, "%s %d\n", ctlSignal, int(n)) // fails only once the supervisor is gone
	}
}

func (j *supervisedJob) stop() {
	_, _ = fmt.Fprintln(j.ctl, ctlStop)
}

func (j *supervisedJob) resume() {
	_, _ = fmt.Fprintln(j.ctl, ctlCont)
}

func (j *supervisedJob) close() {
	j.ctl.Close()
	for range j.events { // the supervisor ends its reports when it exits
	}
	_ = j.cmd.Wait()
}

// readReports turns the supervisor's report lines into events. When the reports end without "done", the
// supervisor died (someone sent it SIGKILL): the command's group may be running with nobody to stop it when the
// lock ends, so rlock kills it at once.
func (j *supervisedJob) readReports(r *os.File) {
	defer close(j.events)
	defer r.Close()
	sc := bufio.NewScanner(r)
	pgid, done := 0, false
	for sc.Scan() {
		ev, err := parseReport(sc.Text())
		if err != nil {
			continue // cannot happen between rlock and itself; a line it cannot read is not acted on
		}
		switch ev.kind {
		case jobStarted:
			pgid = ev.pid
		case jobDone:
			done = true
		}
		j.events <- ev
	}
	if !done {
		if pgid > 0 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		j.events <- jobEvent{kind: jobVanished, pid: pgid}
	}
}

// terminalIsOurs reports whether rlock runs in the foreground of its controlling terminal: then the command gets
// the terminal (its process group becomes the foreground group), as a shell gives it to a job, so that it can
// read from it and gets Ctrl-C and Ctrl-\ directly.
func terminalIsOurs() bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0) // the controlling terminal; ENXIO without one (cron, systemd)
	if err != nil {
		return false
	}
	defer tty.Close()
	fg, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && fg == syscall.Getpgrp()
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// supervise runs the command while the lock is held: it forwards caught signals, stops the command when the lock
// is lost (SIGTERM, then SIGKILL after the grace period), and releases the lock when the command has exited. It
// returns rlock's exit code.
func (x *execRun) supervise(held context.Context, owner string, acquiredAt time.Time) int {
	// Pdeathsig (see childSysProcAttr) is tied to the thread that starts the command: keep this goroutine on it
	// until the command has exited.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	environ := x.e.environ
	if environ == nil {
		environ = os.Environ()
	}
	cmd := &exec.Cmd{
		Path:        x.path,
		Args:        x.argv,
		Env:         append(environ[:len(environ):len(environ)], "RLOCK_NAME="+x.name, "RLOCK_OWNER="+owner),
		Stdin:       x.e.stdin, // *os.File: the command gets the descriptors themselves, no copying goroutines
		Stdout:      x.e.stdout,
		Stderr:      x.e.stderr,
		SysProcAttr: childSysProcAttr(),
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		x.release(held, acquiredAt)
		return x.rep.fail(failure{exitCannotExec, fmt.Sprintf("cannot execute %s: %v", x.argv[0], err)}, x.name)
	}
	pid := cmd.Process.Pid
	x.rep.emit(event{Event: evStarted, Name: x.name, PID: pid, Command: x.argv}, info,
		fmt.Sprintf("started %s (pid %d)", x.argv[0], pid))

	exited := make(chan struct{})
	// Owner: supervise. Exits when the command has exited, which SIGKILL after a lost lock, the forwarded
	// signals, or Pdeathsig (rlock killed) bring about at the latest; always received below.
	go func() {
		_ = cmd.Wait() // the status is read from cmd.ProcessState
		close(exited)
	}()

	var (
		lostCause error            // why the lock stopped being held, once it did
		grace     <-chan time.Time // fires -grace after the SIGTERM of a lost lock
		heldDone  = held.Done()    // nil once the loss was handled
		graceT    *time.Timer      // stopped when the command exits first
	)
loop:
	for {
		select {
		case s := <-x.sigs:
			if x.e.fromTerminal(s) {
				x.rep.emit(event{Event: evSignal, Name: x.name, PID: pid, Signal: sigName(s), Terminal: true}, info,
					fmt.Sprintf("%s came from the terminal, which sent it to %s too", sigName(s), x.argv[0]))
				continue
			}
			_ = cmd.Process.Signal(s) // fails only when the command has exited: its exit is on the way
			x.rep.emit(event{Event: evSignal, Name: x.name, PID: pid, Signal: sigName(s)}, info,
				fmt.Sprintf("forwarded %s to %s (pid %d)", sigName(s), x.argv[0], pid))
		case <-heldDone:
			heldDone = nil
			lostCause = context.Cause(held)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			graceT = time.NewTimer(x.grace)
			grace = graceT.C
			x.rep.emit(event{Event: evLost, Name: x.name, Owner: owner, PID: pid, Signal: "SIGTERM", Cause: causeCode(lostCause)},
				problem, fmt.Sprintf("lost the lock %s while %s ran: %s; sent SIGTERM to pid %d (SIGKILL in %v)",
					shown(x.name), x.argv[0], x.causeText(lostCause), pid, x.grace))
		case <-grace:
			grace = nil
			_ = cmd.Process.Kill()
			x.rep.emit(event{Event: evKilled, Name: x.name, PID: pid, Signal: "SIGKILL"}, problem,
				fmt.Sprintf("%s (pid %d) still ran %v after SIGTERM: sent SIGKILL", x.argv[0], pid, x.grace))
		case <-exited:
			break loop
		}
	}
	if graceT != nil {
		graceT.Stop()
	}

	code, ev, text := exitStatus(cmd.ProcessState)
	ev.Name, ev.PID, ev.RanMS = x.name, pid, ms(time.Since(started))
	x.rep.emit(ev, info, fmt.Sprintf("%s (pid %d) %s after %v", x.argv[0], pid, text, time.Since(started).Round(time.Millisecond)))

	if lostCause == nil && held.Err() != nil {
		// Lost just as the command ended: it may have finished while another owner held the lock.
		lostCause = context.Cause(held)
		x.rep.emit(event{Event: evLost, Name: x.name, Owner: owner, Cause: causeCode(lostCause)}, problem,
			fmt.Sprintf("lost the lock %s as %s ended: %s", shown(x.name), x.argv[0], x.causeText(lostCause)))
	}
	if lostCause == nil {
		lostCause = x.release(held, acquiredAt)
	}
	if lostCause != nil {
		x.rep.emit(event{Event: evError, Name: x.name, Error: "lock lost", ExitCode: ptr(exitLost)}, problem,
			fmt.Sprintf("exit %d: the lock %s was lost while %s ran; another owner may have held it meanwhile",
				exitLost, shown(x.name), x.argv[0]))
		return exitLost
	}
	return code
}

// release releases the lock after the command. It returns a non-nil cause when the release found that the lock
// was no longer held (it was lost); a transport failure is reported but does not change the exit code: the
// command ran under the lock, which now ends with its lease.
func (x *execRun) release(held context.Context, acquiredAt time.Time) (lost error) {
	err := x.lk.Release(context.Background(), held, x.name)
	switch {
	case err == nil:
		x.rep.emit(event{Event: evReleased, Name: x.name, HeldMS: ms(time.Since(acquiredAt))}, info,
			fmt.Sprintf("released %s (held %v)", shown(x.name), time.Since(acquiredAt).Round(time.Millisecond)))
		return nil
	case errors.Is(err, rlock.ErrNotHeld):
		x.rep.emit(event{Event: evLost, Name: x.name, Cause: causeCode(err)}, problem,
			fmt.Sprintf("the lock %s was no longer held when %s ended (it expired or was force-unlocked)", shown(x.name), x.argv[0]))
		return err
	}
	f := describe(err, x.addr, x.name)
	leaseEnd := x.wd
	if x.lease > 0 {
		leaseEnd = x.lease
	}
	x.rep.emit(event{Event: evReleaseFail, Name: x.name, Error: f.msg}, problem,
		fmt.Sprintf("could not release %s: %s; it frees itself when its lease ends (within %v)", shown(x.name), f.msg, leaseEnd))
	return nil
}

// exitStatus turns the command's final state into rlock's exit code (its status, or 128+N when killed by signal
// N) and the exited event.
func exitStatus(ps *os.ProcessState) (int, event, string) {
	ev := event{Event: evExited}
	if ps == nil {
		return exitSoftware, ev, "ended in an unknown state"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		ev.Signal = sigName(ws.Signal())
		return sigCode(ws.Signal()), ev, "was killed by " + ev.Signal
	}
	ev.ExitCode = ptr(ps.ExitCode())
	return ps.ExitCode(), ev, fmt.Sprintf("exited with status %d", ps.ExitCode())
}

// causeCode is the -json "cause" of a lost lock.
func causeCode(err error) string {
	switch {
	case errors.Is(err, rlock.ErrLockLost):
		return "lock_lost"
	case errors.Is(err, rlock.ErrLeaseExpired):
		return "lease_expired"
	case errors.Is(err, rlock.ErrNotHeld):
		return "not_held"
	case errors.Is(err, rlock.ErrClosed):
		return "closed"
	}
	return "unknown"
}

// causeText explains a lost lock to people.
func (x *execRun) causeText(err error) string {
	switch {
	case errors.Is(err, rlock.ErrLockLost):
		return "Redis no longer holds it for this owner (it expired, or someone ran force-unlock)"
	case errors.Is(err, rlock.ErrLeaseExpired) && x.lease > 0:
		return fmt.Sprintf("the fixed -lease %v ran out", x.lease)
	case errors.Is(err, rlock.ErrLeaseExpired):
		return fmt.Sprintf("no renewal was confirmed within the %v watchdog lease (is Redis at %s reachable?)", x.wd, x.addr)
	}
	return fmt.Sprint(err)
}

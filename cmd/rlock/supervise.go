package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// maxStopMargin caps stopMargin.
const maxStopMargin = time.Second

// stopMargin is how long before a fixed lease ends its command must have been sent SIGKILL: the lease is counted
// from before the acquire was sent (or from its return after a wait, a round trip late), and the margin covers that
// round trip and the time the kernel takes to end the processes. A tenth of the lease, at most maxStopMargin.
func stopMargin(lease time.Duration) time.Duration {
	return min(lease/10, maxStopMargin)
}

// leaseEnd is the earliest moment the server may let another owner in after the grant g of a fixed lease: the
// library's own account of it (rlock.LeaseEnd: counted from when the granting command was sent, which for a lock
// handed over by another holder's release is before the release ran), or, for a held context it does not know,
// lease after g.leaseFrom.
func leaseEnd(g grant, lease time.Duration) time.Time {
	end := g.leaseFrom.Add(lease)
	if e, ok := rlock.LeaseEnd(g.held); ok && e.Before(end) {
		end = e
	}
	return end
}

// maxGrace is the longest -grace that fits in the lease. A killed rlock's supervisor sends SIGTERM at once and
// SIGKILL after the grace; the server's lease then has at least two thirds of -watchdog left (it is renewed every
// third), less the renewal's batching delay and round trip, so half of -watchdog leaves a sixth as margin. A
// fixed -lease is stopped on its own schedule (SIGTERM a grace plus stopMargin before its end), which half of the
// lease leaves the command at least two fifths of it to run.
func maxGrace(lease, watchdog time.Duration) time.Duration {
	if lease > 0 {
		return lease / 2
	}
	return watchdog / 2
}

// supervise runs the command while the lock is held: it forwards caught signals to the command's process group,
// stops the group when the lock is lost or a fixed lease is about to end (SIGTERM, then SIGKILL after the grace),
// waits until nothing of the group runs any more, and releases the lock. It returns rlock's exit code: the
// command's own status when the command ended while the lock was held, 79 when the lock was lost (or its fixed
// lease ended) while the command ran.
func (x *execRun) supervise(g grant) int {
	environ := x.e.environ
	if environ == nil {
		environ = os.Environ()
	}
	spec := jobSpec{
		path: x.path, argv: x.argv,
		env:   append(environ[:len(environ):len(environ)], "RLOCK_NAME="+x.name, "RLOCK_OWNER="+g.owner),
		stdin: x.e.stdin, stdout: x.e.stdout, stderr: x.e.stderr,
		grace: x.grace, foreground: x.e.terminal != nil && x.e.terminal(),
	}
	if x.lease > 0 {
		spec.killBy = leaseEnd(g, x.lease).Add(-stopMargin(x.lease))
	}
	started := time.Now()
	j, err := startJob(spec)
	if err != nil {
		x.release(g)
		return x.rep.fail(failure{exitSoftware, fmt.Sprintf("cannot run %s: %v", x.argv[0], err)}, x.name)
	}
	defer j.close()
	fromTerminal := x.e.fromTerminal
	if fromTerminal == nil {
		fromTerminal = func(s os.Signal) bool {
			// The terminal's hangup reaches its foreground group — the command's — from the kernel, while the
			// shell passes it on to its jobs, rlock included: forwarding it would deliver it twice.
			return s == syscall.SIGHUP && j.hasTerminal()
		}
	}

	var (
		pid       int
		lostCause error      // why the lock ended, or was about to, while the command ran
		status    *cmdStatus // how the command ended, once it did
		startErr  error      // the command could not be started
		vanished  bool       // the supervisor died
		heldDone  = g.held.Done()
		cmdName   = x.argv[0]
	)
loop:
	for {
		select {
		case s := <-x.sigs:
			if isContinue(s) {
				j.resume()
				break
			}
			if fromTerminal(s) {
				x.rep.emit(event{Event: evSignal, Name: x.name, PID: pid, Signal: sigName(s), Terminal: true}, info,
					fmt.Sprintf("%s came from the terminal, which sent it to %s too", sigName(s), cmdName))
				continue
			}
			j.signal(s)
			x.rep.emit(event{Event: evSignal, Name: x.name, PID: pid, Signal: sigName(s)}, info,
				fmt.Sprintf("forwarded %s to %s's process group (pid %d)", sigName(s), cmdName, pid))
		case <-heldDone:
			heldDone = nil
			if status != nil {
				break // the command had ended while the lock was held; what it left behind is being stopped
			}
			lostCause = context.Cause(g.held)
			j.stop()
			x.rep.emit(event{Event: evLost, Name: x.name, Owner: g.owner, PID: pid, Signal: "SIGTERM", Cause: causeCode(lostCause)},
				problem, fmt.Sprintf("lost the lock %s while %s ran: %s; sent SIGTERM to its process group (SIGKILL in %v)",
					shown(x.name), cmdName, x.causeText(lostCause), x.grace))
		case ev, ok := <-j.reports():
			if !ok {
				break loop
			}
			switch ev.kind {
			case jobStarted:
				pid = ev.pid
				x.rep.emit(event{Event: evStarted, Name: x.name, PID: pid, Command: x.argv}, info,
					fmt.Sprintf("started %s (pid %d)", cmdName, pid))
			case jobFailed:
				startErr = ev.err
			case jobTermLease:
				if lostCause == nil && status == nil {
					lostCause = rlock.ErrLeaseExpired
					x.rep.emit(event{Event: evLost, Name: x.name, Owner: g.owner, PID: pid, Signal: "SIGTERM", Cause: causeCode(lostCause)},
						problem, fmt.Sprintf("the fixed -lease %v of %s is about to run out while %s runs: sent SIGTERM to "+
							"its process group (SIGKILL by %v before the lease ends)", x.lease, shown(x.name), cmdName,
							stopMargin(x.lease)))
				}
			case jobKilled:
				x.rep.emit(event{Event: evKilled, Name: x.name, PID: pid, Signal: "SIGKILL"}, problem,
					fmt.Sprintf("processes of %s's group (pid %d) still ran %v after SIGTERM: sent SIGKILL", cmdName, pid, x.grace))
			case jobExited:
				status = &ev.status
				_, exited, text := exitStatus(*status)
				exited.Name, exited.PID, exited.RanMS = x.name, pid, ms(time.Since(started))
				x.rep.emit(exited, info, fmt.Sprintf("%s (pid %d) %s after %v", cmdName, pid, text,
					time.Since(started).Round(time.Millisecond)))
				if lostCause == nil && g.held.Err() != nil {
					// Lost just as the command ended: it may have finished while another owner held the lock.
					lostCause = context.Cause(g.held)
					heldDone = nil
					x.rep.emit(event{Event: evLost, Name: x.name, Owner: g.owner, Cause: causeCode(lostCause)}, problem,
						fmt.Sprintf("lost the lock %s as %s ended: %s", shown(x.name), cmdName, x.causeText(lostCause)))
				}
			case jobResumed:
				x.rep.emit(event{Event: evSignal, Name: x.name, PID: pid, Signal: sigName(ev.status.signal), Terminal: true},
					problem, fmt.Sprintf("%s stopped %s at the terminal: continued it, since a command cannot be suspended "+
						"under rlock (rlock would have to stop too, and nothing would renew the lock); Ctrl-C ends it",
						sigName(ev.status.signal), cmdName))
			case jobLeftovers:
				x.rep.emit(event{Event: evLeftovers, Name: x.name, PID: pid, Signal: "SIGTERM"}, problem,
					fmt.Sprintf("%s (pid %d) ended, but processes it started still ran in its process group: sent them "+
						"SIGTERM (SIGKILL in %v) before releasing %s", cmdName, pid, x.grace, shown(x.name)))
			case jobDone:
				break loop
			case jobVanished:
				vanished = true
				break loop
			}
		}
	}

	switch {
	case startErr != nil:
		x.release(g)
		code := exitCannotExec
		if errors.Is(startErr, syscall.ENOENT) {
			code = exitNotFound
		}
		return x.rep.fail(failure{code, fmt.Sprintf("cannot execute %s: %v", cmdName, startErr)}, x.name)
	case vanished && status == nil:
		x.release(g)
		return x.rep.fail(failure{exitSoftware, fmt.Sprintf("the supervisor of %s (pid %d) died, killed from outside: rlock "+
			"sent SIGKILL to the command's process group; its status is unknown", cmdName, pid)}, x.name)
	case lostCause != nil:
		if g.held.Err() == nil {
			x.release(g) // a fixed lease stopped early is still held: free it for the next owner now
		}
		x.rep.emit(event{Event: evError, Name: x.name, Error: "lock lost", ExitCode: ptr(exitLost)}, problem,
			fmt.Sprintf("exit %d: the lock %s was lost, or its lease ran out, while %s ran; another owner may have "+
				"held it meanwhile", exitLost, shown(x.name), cmdName))
		return exitLost
	}
	// The command ended while the lock was held: its status is rlock's, whatever becomes of the release.
	x.release(g)
	code, _, _ := exitStatus(*status)
	return code
}

// release releases the lock after the command. A release that fails, or finds the lock no longer held, is
// reported as a warning: the command ran under the lock, which now ends with its lease if it still exists. It
// blocks for at most the lease's length: by then the lock has freed itself anyway.
func (x *execRun) release(g grant) {
	leaseLen := x.wd
	if x.lease > 0 {
		leaseLen = x.lease
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaseLen)
	defer cancel()
	err := x.lk.Release(ctx, g.held, x.name)
	if err == nil {
		x.rep.emit(event{Event: evReleased, Name: x.name, HeldMS: ms(time.Since(g.at))}, info,
			fmt.Sprintf("released %s (held %v)", shown(x.name), time.Since(g.at).Round(time.Millisecond)))
		return
	}
	if errors.Is(err, rlock.ErrNotHeld) {
		x.rep.emit(event{Event: evReleaseFail, Name: x.name, Cause: causeCode(err), Error: "the lock was no longer held"},
			problem, fmt.Sprintf("warning: %s was no longer held when rlock released it (it expired, or someone ran "+
				"force-unlock, after %s's last renewal)", shown(x.name), x.argv[0]))
		return
	}
	f := describe(err, x.addr, x.name)
	if ctx.Err() != nil {
		f.msg = fmt.Sprintf("Redis at %s did not confirm it within the %v lease", x.addr, leaseLen)
	}
	x.rep.emit(event{Event: evReleaseFail, Name: x.name, Error: f.msg}, problem,
		fmt.Sprintf("warning: could not release %s: %s; it frees itself when its lease ends (within %v)",
			shown(x.name), f.msg, leaseLen))
}

// exitStatus turns the command's end into rlock's exit code (its status, or 128+N when killed by signal N) and
// the exited event.
func exitStatus(st cmdStatus) (int, event, string) {
	ev := event{Event: evExited}
	if st.signal != 0 {
		ev.Signal = sigName(st.signal)
		return sigCode(st.signal), ev, "was killed by " + ev.Signal
	}
	ev.ExitCode = ptr(st.code)
	return st.code, ev, fmt.Sprintf("exited with status %d", st.code)
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

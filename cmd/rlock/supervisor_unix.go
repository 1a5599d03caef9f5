//go:build unix

package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// leftoverPoll is how often the supervisor looks whether the command's process group is empty while it waits for
// processes it is not the parent of (systems without a child subreaper, where orphans go to init).
const leftoverPoll = 50 * time.Millisecond

// The supervisor is the piece that makes "the command never outlives the lock" hold when rlock itself dies —
// kill -9, the OOM killer — and nothing renews the lock any more. rlock exec starts it (rlock re-executed with
// supervisorArg) once the lock is held; it runs in a process group of its own and starts the command in another,
// new process group that the command's children inherit, so that one kill(-pgid) reaches every process the
// command started (unless one leaves the group on purpose: setsid, a daemon). It holds the read end of a pipe
// whose only writer is rlock: when the pipe ends without a word, rlock is gone, and the supervisor sends the group
// SIGTERM, then SIGKILL after the grace — which rlock exec's -grace rule fits inside the lease that is left on the
// server — and exits once the group is empty.
//
// It also acts for a live rlock: forwarding signals to the whole group, stopping the group when the lock is lost
// (message "stop") or when a fixed lease is about to end (its own timer, so that a frozen rlock cannot delay it),
// and after the command has exited, stopping what it left behind in the group before rlock releases the lock. On
// Linux it is the group's child subreaper, so the command's orphans become its children and their exits are seen
// as they happen; elsewhere it looks every leftoverPoll. When rlock gave the command the terminal (-fg), it takes
// it back for rlock's process group once the group is empty.
//
// It ignores the signals a terminal or a service manager sends to a whole job (SIGINT, SIGTERM, SIGHUP, SIGQUIT,
// SIGUSR1, SIGUSR2): systemd's default KillMode sends SIGTERM to every process of the unit, and the supervisor
// must outlive rlock to do its work. Only SIGKILL ends it early, and then rlock, when alive, kills the group.
type supervisor struct {
	rep    *os.File // the report pipe to rlock; nil once rlock is gone
	pgid   int      // the command's pid, and its process group
	grace  time.Duration
	killBy time.Time // a fixed lease's last moment for SIGKILL; zero for the watchdog

	tty       *os.File // the controlling terminal, or nil when there is none
	rlockPgrp int      // rlock's process group, which gets the terminal back

	exited   bool        // the command has exited and was reaped
	stopping bool        // the group got SIGTERM; SIGKILL follows at killC
	killT    *time.Timer // fires killC
	killC    <-chan time.Time
}

// supervisorMain runs the supervisor: flags -grace D, -kill-by UNIXNANO, -fg, -pgrp N, then "--" and the
// command's path and argv; fd 3 is the control pipe, fd 4 the report pipe. It returns the process's exit code.
func supervisorMain(args []string) int {
	fs := flag.NewFlagSet(supervisorArg, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	grace := fs.Duration("grace", defaultGrace, "SIGTERM to SIGKILL")
	killBy := fs.Int64("kill-by", 0, "Unix time in ns by which the group must have got SIGKILL (0: none)")
	killByMono := fs.Int64("kill-by-mono", 0, "the same deadline on the machine's monotonic clock (0: not given)")
	fg := fs.Bool("fg", false, "give the command the controlling terminal")
	pgrp := fs.Int("pgrp", 0, "rlock's process group, which gets the terminal back")
	if err := fs.Parse(args); err != nil || fs.NArg() < 2 || !isPipe(3) || !isPipe(4) {
		fmt.Fprintln(os.Stderr, "rlock: "+supervisorArg+" is rlock exec's supervisor mode, started by rlock exec, not by hand")
		return exitUsage
	}
	syscall.CloseOnExec(3) // the command must not hold the pipes: their ends are how rlock and the supervisor
	syscall.CloseOnExec(4) // notice each other's exit
	ctl, rep := os.NewFile(3, "rlock-control"), os.NewFile(4, "rlock-report")
	s := &supervisor{rep: rep, grace: *grace, rlockPgrp: *pgrp}
	if *killBy != 0 {
		s.killBy = killDeadline(*killBy, *killByMono)
	}

	ignored := make(chan os.Signal, 8)
	signal.Notify(ignored, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	becomeSubreaper()

	attr := &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Setpgid: true}}
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil { // ENXIO without a controlling terminal
		s.tty = tty
		if *fg {
			attr.Sys.Foreground, attr.Sys.Ctty = true, int(tty.Fd()) // the child calls tcsetpgrp with signals blocked
		}
	}
	pid, err := syscall.ForkExec(fs.Arg(0), fs.Args()[1:], attr)
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EINVAL
		}
		s.report(repFailed, int(errno))
		s.report(repDone, -1)
		return 0
	}
	s.pgid = pid
	s.report(repStarted, pid)
	// Giving the terminal back is a tcsetpgrp from a background group, which needs SIGTTOU ignored; set only now,
	// so that the command did not inherit the ignored disposition.
	signal.Ignore(syscall.SIGTTOU)
	s.run(ctl, pid, ignored)
	return 0
}

// isPipe reports whether fd is an open pipe.
func isPipe(fd int) bool {
	var st syscall.Stat_t
	return syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO
}

// run supervises the started command until its process group is empty.
func (s *supervisor) run(ctl *os.File, pid int, ignored <-chan os.Signal) {
	control := make(chan string, 16)
	// Owner: the supervisor. Exits at the end of the control pipe (rlock closed it or died); the process exits
	// without waiting for it when the group is empty first.
	go readLines(ctl, control)
	reaped := make(chan reapResult, 16)
	// Owner: the supervisor. Exits when no child is left (ECHILD).
	go reapChildren(reaped)

	var termC <-chan time.Time // a fixed lease's SIGTERM time
	if !s.killBy.IsZero() {
		t := time.NewTimer(time.Until(s.killBy.Add(-s.grace)))
		defer t.Stop()
		termC = t.C
	}
	var poll *time.Ticker // runs while leftovers that may not be our children are waited for
	defer func() {
		if poll != nil {
			poll.Stop()
		}
	}()
	for {
		var pollC <-chan time.Time
		if poll != nil {
			pollC = poll.C
		}
		select {
		case <-ignored:
		case line, ok := <-control:
			if !ok {
				control = nil
				s.rep = nil // rlock is gone: nobody reads reports any more
				s.beginStop()
				break
			}
			s.obey(line)
		case r, ok := <-reaped:
			if !ok {
				reaped = nil
				break
			}
			if r.pid == pid && r.status.Stopped() {
				s.stopped(r.status.StopSignal())
			}
			if r.pid == pid && (r.status.Exited() || r.status.Signaled()) {
				s.exited = true
				if r.status.Signaled() {
					s.report(repSignaled, int(r.status.Signal()))
				} else {
					s.report(repExited, r.status.ExitStatus())
				}
			}
		case <-termC:
			termC = nil
			if !s.stopping {
				s.report(repTermLease, -1)
				s.beginStop()
			}
		case <-s.killC:
			s.killC = nil
			s.signalGroup(syscall.SIGKILL)
			s.report(repKilled, -1)
		case <-pollC:
		}
		if !s.exited {
			continue
		}
		if groupGone(s.pgid) {
			s.giveTerminalBack()
			s.report(repDone, -1)
			return
		}
		if poll == nil {
			poll = time.NewTicker(leftoverPoll)
		}
		if !s.stopping {
			s.report(repLeftovers, -1)
			s.beginStop()
		}
	}
}

// obey carries out one control message of rlock.
func (s *supervisor) obey(line string) {
	word, arg, _ := strings.Cut(line, " ")
	switch word {
	case ctlSignal:
		if n, err := strconv.Atoi(arg); err == nil {
			s.signalGroup(syscall.Signal(n))
		}
	case ctlStop:
		s.beginStop()
	case ctlCont:
		// rlock was continued by its shell: on fg, its group has the terminal again and passes it on, as when the
		// command started; on bg, the command runs on in the background (and stops again if it reads the
		// terminal, as any background job).
		if s.tty != nil && s.foreground() == s.rlockPgrp {
			_ = unix.IoctlSetPointerInt(int(s.tty.Fd()), unix.TIOCSPGRP, s.pgid)
		}
		s.signalGroup(syscall.SIGCONT)
	}
}

// stopped handles the command stopped by sig (Ctrl-Z's SIGTSTP, or a SIGSTOP it sent itself on Ctrl-Z, as
// editors do) while its group holds the terminal. A shell regains the terminal only when its job — rlock —
// stops, and a stopped rlock renews nothing: the lock would be lost. So the command cannot be suspended: the
// supervisor continues the group at once, and rlock says why. A command stopped while in the background (reading
// the terminal: SIGTTIN) stays stopped until rlock's shell continues rlock (ctlCont).
func (s *supervisor) stopped(sig syscall.Signal) {
	if s.stopping || s.tty == nil || s.foreground() != s.pgid {
		return
	}
	s.signalGroup(syscall.SIGCONT)
	s.report(repResumed, int(sig))
}

// foreground returns the terminal's foreground process group, or -1.
func (s *supervisor) foreground() int {
	fg, err := unix.IoctlGetInt(int(s.tty.Fd()), unix.TIOCGPGRP)
	if err != nil {
		return -1
	}
	return fg
}

// beginStop sends the group SIGTERM (with SIGCONT, so that a stopped process acts on it) and arms SIGKILL after
// the grace, or at the fixed lease's kill-by time when that comes first. Later calls do nothing.
func (s *supervisor) beginStop() {
	if s.stopping {
		return
	}
	s.stopping = true
	s.signalGroup(syscall.SIGTERM)
	s.signalGroup(syscall.SIGCONT)
	d := s.grace
	if !s.killBy.IsZero() {
		d = min(d, time.Until(s.killBy))
	}
	s.killT = time.NewTimer(max(d, 0))
	s.killC = s.killT.C
}

// signalGroup sends sig to every process of the command's group. A group already empty makes it do nothing: its
// id cannot have been reused, since a process group id stays taken while any member lives.
func (s *supervisor) signalGroup(sig syscall.Signal) {
	_ = syscall.Kill(-s.pgid, sig)
}

// groupGone reports whether no process of the group is left (the supervisor reaps its own children, so none
// lingers as a zombie).
func groupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// giveTerminalBack makes rlock's process group the terminal's foreground group again, when the command's group
// still has it.
func (s *supervisor) giveTerminalBack() {
	if s.tty == nil {
		return
	}
	if s.foreground() == s.pgid && s.rlockPgrp > 0 {
		_ = unix.IoctlSetPointerInt(int(s.tty.Fd()), unix.TIOCSPGRP, s.rlockPgrp)
	}
	s.tty.Close()
}

// report writes one report line ("word" or "word N" when n >= 0) to rlock. Once rlock is gone there is nobody to
// tell: a failed write ends the reports.
func (s *supervisor) report(word string, n int) {
	if s.rep == nil {
		return
	}
	line := word + "\n"
	if n >= 0 {
		line = word + " " + strconv.Itoa(n) + "\n"
	}
	if _, err := s.rep.WriteString(line); err != nil {
		s.rep = nil
	}
}

// reapResult is one child's change of state.
type reapResult struct {
	pid    int
	status syscall.WaitStatus
}

// reapChildren waits for every child of the supervisor (the command, and on Linux the command's orphans) and
// sends each exit, and each stop, on out; it closes out when no child is left.
func reapChildren(out chan<- reapResult) {
	defer close(out)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WUNTRACED, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return // ECHILD: no child left
		}
		out <- reapResult{pid: pid, status: ws}
	}
}

// readLines sends each line of r on out and closes out at the end of r.
func readLines(r *os.File, out chan<- string) {
	defer close(out)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		out <- sc.Text()
	}
}

// killDeadline turns the kill deadline rlock passed into a time on this process's monotonic clock, so that a step
// of the wall clock while the command runs does not delay the SIGKILL (a step on the server's machine moves its
// key expiry, which no client can guard against). The deadline on the machine's monotonic clock is used when given
// (machineMonotonic); the wall-clock one otherwise, which a step between rlock's reading and this one shifts.
func killDeadline(wallNanos, monoNanos int64) time.Time {
	if monoNanos != 0 {
		if now, ok := machineMonotonic(); ok {
			return time.Now().Add(time.Duration(monoNanos - now))
		}
	}
	return time.Now().Add(time.Until(time.Unix(0, wallNanos)))
}

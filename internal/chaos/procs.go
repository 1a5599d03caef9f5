package chaos

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one worker process started by the orchestrator.
type proc struct {
	info     ProcInfo
	group    int // 0: behind proxy A (the one partitions and latency hit), 1: behind proxy B
	clientID string
	logPath  string
	cmd      *exec.Cmd
	done     chan struct{} // closed when the process was reaped; info.Exited and info.ExitErr are set then
	mu       sync.Mutex    // guards info after start
}

// procs is the orchestrator's set of workers. Safe for concurrent use.
type procs struct {
	cfg *RunConfig

	mu     sync.Mutex
	all    []*proc
	reaper sync.WaitGroup // one reaping goroutine per started process
}

// start starts worker index in group, waits for its "ready" line and returns it. The process is killed if the
// parent dies (Pdeathsig), so a crashed test leaves no worker behind.
func (ps *procs) start(index, group int, addr string) (*proc, error) {
	cfg := ps.cfg
	w := cfg.Worker
	p := &proc{group: group, logPath: filepath.Join(cfg.Dir, fmt.Sprintf("worker-%03d.log", index)),
		done: make(chan struct{})}
	args := []string{
		"-proc", strconv.Itoa(index), "-addr", addr, "-locks", strings.Join(cfg.lockNames(), ","),
		"-g", strconv.Itoa(cfg.Goroutines), "-watchdog", w.Watchdog.String(), "-lease", w.Lease.String(),
		"-rt", w.ResponseTimeout.String(), "-wait", w.WaitBound.String(), "-hold-min", w.HoldMin.String(),
		"-hold-max", w.HoldMax.String(), "-check", w.CheckEvery.String(),
		"-plain", strconv.FormatFloat(w.Plain, 'f', -1, 64), "-long", strconv.FormatFloat(w.LongHolds, 'f', -1, 64),
		"-tolerance", w.Tolerance.String(), "-forms", w.Forms,
		"-unlock-lost", strconv.FormatFloat(w.UnlockLost, 'f', -1, 64),
		"-stat", w.StatEvery.String(), "-log", p.logPath, "-seed", strconv.FormatUint(cfg.Seed+uint64(index), 10),
	}
	cmd := cfg.Command(args)
	cmd.SysProcAttr = sysProcAttr()
	stderr, err := os.Create(filepath.Join(cfg.Dir, fmt.Sprintf("worker-%03d.stderr", index)))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		stderr.Close()
		return nil, err
	}
	p.info.Started = Now()
	if err := cmd.Start(); err != nil {
		stderr.Close()
		return nil, fmt.Errorf("chaos: start worker %d: %w", index, err)
	}
	p.cmd = cmd
	p.info.Index, p.info.PID = index, cmd.Process.Pid

	ready := make(chan string, 1)
	ps.reaper.Add(1)
	go func() { // owner: procs; exits when the process has exited and been reaped
		defer ps.reaper.Done()
		defer stderr.Close()
		sc := bufio.NewScanner(out)
		line := ""
		if sc.Scan() {
			line = sc.Text()
		}
		ready <- line
		for sc.Scan() { // drain: the worker prints nothing else, but must never block on a full pipe
		}
		err := cmd.Wait()
		p.mu.Lock()
		p.info.Exited = Now()
		if err != nil {
			p.info.ExitErr = err.Error()
		}
		p.mu.Unlock()
		close(p.done)
	}()
	select {
	case line := <-ready:
		id, ok := strings.CutPrefix(line, "ready ")
		if !ok {
			cmd.Process.Kill()
			<-p.done
			b, _ := os.ReadFile(stderr.Name())
			return nil, fmt.Errorf("chaos: worker %d did not start (%s): %s", index, p.exitErr(), b)
		}
		p.clientID = id
	case <-time.After(cfg.StartTimeout):
		cmd.Process.Kill()
		<-p.done
		return nil, fmt.Errorf("chaos: worker %d not ready within %v", index, cfg.StartTimeout)
	}
	ps.mu.Lock()
	ps.all = append(ps.all, p)
	ps.mu.Unlock()
	return p, nil
}

func (p *proc) exitErr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.info.ExitErr
}

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill SIGKILLs p (a fault) and waits until it was reaped. It returns when the process was seen dead.
func (p *proc) kill() {
	p.mu.Lock()
	p.info.Killed = true
	p.mu.Unlock()
	p.cmd.Process.Signal(syscall.SIGKILL)
	t := Now()
	p.mu.Lock()
	p.info.KilledAt = t
	p.mu.Unlock()
	<-p.done
}

// live returns the running workers, optionally only those of one group (-1: all).
func (ps *procs) live(group int) []*proc {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []*proc
	for _, p := range ps.all {
		if p.alive() && (group < 0 || p.group == group) {
			out = append(out, p)
		}
	}
	return out
}

// byClient returns the live worker whose rlock client has id.
func (ps *procs) byClient(id string) *proc {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.all {
		if p.clientID == id && p.alive() {
			return p
		}
	}
	return nil
}

// stopAll sends SIGTERM to every live worker and waits up to timeout for each to exit; a worker still running
// then is killed and marked Forced (something in it hung). It then waits for every reaping goroutine.
func (ps *procs) stopAll(timeout time.Duration) {
	live := ps.live(-1)
	for _, p := range live {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for _, p := range live {
		select {
		case <-p.done:
		case <-deadline.C:
			// Every later worker gets no more time either: the deadline is shared.
			deadline.Reset(0)
			p.mu.Lock()
			p.info.Forced = true
			p.mu.Unlock()
			p.cmd.Process.Signal(syscall.SIGQUIT) // the Go runtime prints every goroutine's stack to stderr
			select {
			case <-p.done:
			case <-time.After(2 * time.Second):
				p.cmd.Process.Kill()
				<-p.done
			}
		}
	}
	ps.reaper.Wait()
}

// infos returns every worker's ProcInfo. Call after stopAll.
func (ps *procs) infos() []ProcInfo {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]ProcInfo, 0, len(ps.all))
	for _, p := range ps.all {
		p.mu.Lock()
		out = append(out, p.info)
		p.mu.Unlock()
	}
	return out
}

// records reads every worker's log.
func (ps *procs) records() ([]Record, error) {
	ps.mu.Lock()
	all := append([]*proc(nil), ps.all...)
	ps.mu.Unlock()
	var recs []Record
	var errs []error
	for _, p := range all {
		r, err := ReadLogFile(p.logPath)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		recs = append(recs, r...)
	}
	return recs, errors.Join(errs...)
}

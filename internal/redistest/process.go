package redistest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

const (
	logFileName = "redis.log"
	logTailSize = 4 << 10 // bytes of log shown in a StartError
)

// process is one running redis-server child.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed by the waiter goroutine once the child has exited and been reaped
	err    error         // result of cmd.Wait; written before exited is closed
}

// startProcess execs bin with args in dir (no shell), its stdout and stderr
// appended to dir/redis.log.
func startProcess(bin string, args []string, dir string) (*process, error) {
	f, err := os.OpenFile(filepath.Join(dir, logFileName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	// An *os.File is handed to the child as its fd: no copying goroutine, and
	// the log survives the test binary.
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	f.Close() // the child holds its own copy of the descriptor
	if err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	// Owner: this process value. Exits when the child exits; stop and kill
	// wait for it, so it never outlives Close.
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// running reports whether the child has not exited yet.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// signal sends sig to exactly this pid; a process that already exited is not
// an error.
func (p *process) signal(sig syscall.Signal) error {
	if !p.running() {
		return nil
	}
	err := p.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// stop sends SIGTERM, then SIGKILL if the process has not exited within
// timeout, and waits until it has exited. A stopped (SIGSTOP) process is
// continued first so it can see SIGTERM.
func (p *process) stop(timeout time.Duration) error {
	if err := p.signal(syscall.SIGTERM); err != nil {
		return err
	}
	_ = p.signal(sigResume)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.exited:
		return nil
	case <-t.C:
	}
	return p.kill()
}

// kill sends SIGKILL and waits until the process has exited.
func (p *process) kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.exited
	return nil
}

// logTail returns the last logTailSize bytes of dir/redis.log, starting at a
// line boundary.
func logTail(dir string) string {
	f, err := os.Open(filepath.Join(dir, logFileName))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	off := max(st.Size()-logTailSize, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// serverBinary returns the path of redis-server or ErrNotInstalled. It looks
// PATH up on every call (cheap), so a test can change PATH.
func serverBinary() (string, error) {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", ErrNotInstalled
	}
	return p, nil
}

// cliBinary returns the path of redis-cli or ErrNotInstalled.
func cliBinary() (string, error) {
	p, err := exec.LookPath("redis-cli")
	if err != nil {
		return "", ErrNotInstalled
	}
	return p, nil
}

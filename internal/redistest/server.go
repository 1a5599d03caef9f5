package redistest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// serverMode says how a process runs: which config it gets and whether it is
// started with --sentinel.
type serverMode uint8

const (
	modeStandalone serverMode = iota // plain redis-server (also master or replica)
	modeSentinel                     // redis-server CONF --sentinel
	modeCluster                      // cluster-enabled yes
)

const (
	confFileName   = "redis.conf"
	maxPortRetries = 20
)

// Server is one redis-server process (standalone, replica, Sentinel or
// cluster node) on a loopback port, in its own directory.
//
// All methods are safe for concurrent use; Close, Kill, Stop, Restart, Pause
// and Resume are serialised against each other, and Pid and Running wait for
// one of them that is in progress (a Restart takes up to the start bound).
type Server struct {
	opts    options
	mode    serverMode
	dir     string
	ownsDir bool // removed by Close (topology members: the topology removes its root)
	tlsm    *tlsMaterial
	extra   []string // mode-specific config lines (replicaof, sentinel monitor, cluster-enabled)
	auth    []string // AUTH arguments for the admin client; nil for none
	port    int      // fixed once the first start succeeded
	retries int      // starts retried because the port was taken

	mu     sync.Mutex // guards the fields below; held across a whole Close/Kill/Restart
	proc   *process   // nil while stopped
	closed bool
}

// Start starts a standalone redis-server for the test and registers its Close
// with t.Cleanup. It calls t.Fatal (with an install hint if redis-server is
// missing, or the server's log tail if it does not start). It blocks until the
// server answers PING, at most StartTimeout per attempt.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := StartServer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanupServer(t, s) })
	return s
}

// cleanupServer shows the log of a failed test's server before removing it.
func cleanupServer(t testing.TB, s *Server) {
	if t.Failed() {
		t.Logf("redistest: log tail of %s (pid %d):\n%s", s.Addr(), s.Pid(), s.LogTail())
	}
	if err := s.Close(); err != nil {
		t.Errorf("redistest: closing %s: %v", s.Addr(), err)
	}
}

// StartServer starts a standalone redis-server for callers without a
// testing.TB (the benchmark CLI, examples); the caller must call Close. It
// blocks until the server answers PING; errors are ErrNotInstalled or a
// *StartError carrying the log tail.
func StartServer(opts ...Option) (*Server, error) {
	o := newOptions(opts)
	dir, err := os.MkdirTemp("", "redistest-*")
	if err != nil {
		return nil, fmt.Errorf("redistest: creating a temporary directory: %w", err)
	}
	var tlsm *tlsMaterial
	if o.tls {
		if tlsm, err = newTLSMaterial(dir); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("redistest: generating TLS certificates: %w", err)
		}
	}
	s := newServer(o, modeStandalone, dir, true, tlsm, nil)
	if err := s.firstStart(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func newServer(o options, mode serverMode, dir string, ownsDir bool, tlsm *tlsMaterial, extra []string) *Server {
	s := &Server{opts: o, mode: mode, dir: dir, ownsDir: ownsDir, tlsm: tlsm, extra: extra}
	if mode != modeSentinel {
		switch {
		case o.password != "":
			s.auth = []string{o.password}
		case len(o.users) > 0:
			s.auth = []string{o.users[0].name, o.users[0].pass}
		}
	}
	return s
}

// Addr returns "127.0.0.1:PORT" (the TLS port with WithTLS).
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port returns the server's port (the TLS port with WithTLS).
func (s *Server) Port() int { return s.port }

// URL returns redis://[user:pass@]127.0.0.1:PORT, or rediss:// with WithTLS.
// The credentials are the first ACL user's, else the default user's password.
func (s *Server) URL() string {
	u := url.URL{Scheme: "redis", Host: s.Addr()}
	if s.tlsm != nil {
		u.Scheme = "rediss"
	}
	if s.mode != modeSentinel {
		switch {
		case len(s.opts.users) > 0:
			u.User = url.UserPassword(s.opts.users[0].name, s.opts.users[0].pass)
		case s.opts.password != "":
			u.User = url.UserPassword("", s.opts.password)
		}
	}
	return u.String()
}

// TLSConfig returns a new client *tls.Config that trusts the server's CA and
// presents a client certificate, or nil without WithTLS.
func (s *Server) TLSConfig() *tls.Config {
	if s.tlsm == nil {
		return nil
	}
	return s.tlsm.client.Clone()
}

func (s *Server) clientTLS() *tls.Config {
	if s.tlsm == nil {
		return nil
	}
	return s.tlsm.client
}

// Dir returns the server's directory (config, log, persistence files).
func (s *Server) Dir() string { return s.dir }

// LogTail returns the last few KiB of the server's log (its stdout/stderr).
func (s *Server) LogTail() string { return logTail(s.dir) }

// Pid returns the pid of the running process, or 0 while it is stopped.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || !s.proc.running() {
		return 0
	}
	return s.proc.pid()
}

// Close stops the process (SIGTERM, then SIGKILL after DefaultStopTimeout),
// waits until it has exited and removes its directory. It blocks for at most
// about DefaultStopTimeout; a second Close returns nil.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.proc != nil {
		err = s.proc.stop(s.opts.stopTimeout)
		s.proc = nil
	}
	if s.ownsDir {
		if rerr := os.RemoveAll(s.dir); err == nil {
			err = rerr
		}
	}
	return err
}

// Kill crashes the process with SIGKILL and waits until it has exited. The
// directory stays, so Restart brings the server back on the same port (with
// its data when WithPersistence is on). It returns ErrNotRunning when the
// process is not running.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.proc == nil || !s.proc.running() {
		s.proc = nil
		return ErrNotRunning
	}
	err := s.proc.kill()
	s.proc = nil
	return err
}

// Stop shuts the server down gracefully (SIGTERM, SIGKILL after the stop
// bound) and waits for it, keeping the directory for Restart. Stopping a
// stopped server returns nil.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.stopLocked()
}

func (s *Server) stopLocked() error {
	if s.proc == nil {
		return nil
	}
	err := s.proc.stop(s.opts.stopTimeout)
	s.proc = nil
	return err
}

// Restart stops the server if it runs (gracefully) and starts it again on the
// same port, from the same directory and config file (which Sentinel and
// cluster nodes may have rewritten). With WithPersistence the data survives,
// even after Kill. It blocks until the server answers PING, at most the start
// bound; if another process holds the port meanwhile it retries until then.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if err := s.stopLocked(); err != nil {
		return err
	}
	deadline := time.Now().Add(StartTimeout)
	for {
		err := s.launchLocked(deadline)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errAddrInUse) || time.Now().After(deadline) {
			return &StartError{Addr: s.Addr(), Dir: s.dir, Log: s.LogTail(), Err: err}
		}
		time.Sleep(50 * time.Millisecond) // the port holder is not ours to watch: back off and retry
	}
}

// Pause freezes the process with SIGSTOP: it keeps its sockets but answers
// nothing, like a hung server. Resume continues it. Windows has no such
// signal: there both return an error.
func (s *Server) Pause() error { return s.signal(sigPause) }

// Resume continues a process frozen by Pause.
func (s *Server) Resume() error { return s.signal(sigResume) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.proc == nil || !s.proc.running() {
		return ErrNotRunning
	}
	return s.proc.signal(sig)
}

// Running reports whether the process is running (it may be paused).
func (s *Server) Running() bool { return s.Pid() != 0 }

var errAddrInUse = errors.New("redistest: port already in use")

// firstStart picks a port, writes the config and starts the process, retrying
// on another port when the chosen one was taken meanwhile (unless WithPort
// fixed it).
func (s *Server) firstStart() error {
	if _, err := serverBinary(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		port := s.opts.port
		if port == 0 {
			p, err := pickPortFunc(s.mode == modeCluster)
			if err != nil {
				return fmt.Errorf("redistest: no free loopback port: %w", err)
			}
			port = p
		}
		s.port = port
		if err := s.writeConfig(); err != nil {
			return err
		}
		deadline := time.Now().Add(StartTimeout)
		err := s.launchLocked(deadline)
		if err == nil {
			return nil
		}
		if errors.Is(err, errAddrInUse) && s.opts.port == 0 && s.retries < maxPortRetries {
			s.retries++
			_ = os.Remove(filepath.Join(s.dir, logFileName))
			continue
		}
		return &StartError{Addr: s.Addr(), Dir: s.dir, Log: s.LogTail(), Err: err, Retries: s.retries}
	}
}

// launchLocked execs redis-server on the existing config and waits until it
// answers; on failure the process is killed and waited for.
func (s *Server) launchLocked(deadline time.Time) error {
	bin, err := serverBinary()
	if err != nil {
		return err
	}
	args := []string{filepath.Join(s.dir, confFileName)}
	if s.mode == modeSentinel {
		args = append(args, "--sentinel")
	}
	p, err := startProcess(bin, args, s.dir)
	if err != nil {
		return err
	}
	if err := s.waitReady(p, deadline); err != nil {
		_ = p.kill()
		return err
	}
	s.proc = p
	return nil
}

// waitReady polls until this very process answers: PING must succeed (not
// LOADING) and INFO must report our pid, so a server of another test that
// holds the port is never taken for ours. There is no event to wait for in an
// external process, hence the short, growing poll interval.
func (s *Server) waitReady(p *process, deadline time.Time) error {
	delay := 2 * time.Millisecond
	var last error
	for {
		select {
		case <-p.exited:
			if strings.Contains(logTail(s.dir), "Address already in use") {
				return errAddrInUse
			}
			return fmt.Errorf("redis-server exited: %v", p.err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within the start bound (last error: %v)", last)
		}
		last = s.probe(p.pid(), deadline)
		if last == nil {
			return nil
		}
		var re *ReplyError
		if errors.As(last, &re) && re.Prefix() != "LOADING" {
			return last // an answer, but a refusal (bad password...): retrying will not help
		}
		t := time.NewTimer(delay)
		select {
		case <-p.exited:
		case <-t.C:
		}
		t.Stop()
		delay = min(2*delay, 50*time.Millisecond)
	}
}

func (s *Server) probe(pid int, deadline time.Time) error {
	d := time.Now().Add(250 * time.Millisecond)
	if deadline.Before(d) {
		d = deadline
	}
	ctx, cancel := context.WithDeadline(context.Background(), d)
	defer cancel()
	if _, err := doCommand(ctx, s.Addr(), s.clientTLS(), s.auth, []string{"PING"}); err != nil {
		return err
	}
	r, err := doCommand(ctx, s.Addr(), s.clientTLS(), s.auth, []string{"INFO", "server"})
	if err != nil {
		return err
	}
	if got := parseInfo(r.Str)["process_id"]; got != strconv.Itoa(pid) {
		return fmt.Errorf("port answered by process_id %s, not our pid %d", got, pid)
	}
	return nil
}

// writeConfig writes redis.conf: defaults, then mode lines, then WithConfig
// lines (later lines override earlier ones).
func (s *Server) writeConfig() error {
	lines := []string{
		"bind 127.0.0.1",
		"dir " + quote(s.dir),
		"daemonize no",
		`logfile ""`,
	}
	if s.tlsm != nil {
		lines = append(lines, s.tlsm.configLines(s.port, s.mode == modeCluster)...)
	} else {
		lines = append(lines, "port "+itoa(s.port))
	}
	if s.mode != modeSentinel {
		lines = append(lines, `save ""`)
		if s.opts.persistence {
			lines = append(lines, "appendonly yes", "appendfsync always") // see WithPersistence
		} else {
			lines = append(lines, "appendonly no")
		}
		// A replica's first full sync starts at once instead of after the
		// default 5 s wait for more replicas to batch with.
		lines = append(lines, "repl-diskless-sync-delay 0")
		if serverMajor() >= 7 {
			lines = append(lines, "enable-debug-command local") // DEBUG SLEEP etc. for fault tests
		}
		if s.opts.password != "" {
			lines = append(lines, "requirepass "+quote(s.opts.password), "masterauth "+quote(s.opts.password))
		}
		for _, u := range s.opts.users {
			lines = append(lines, "user "+u.name+" on >"+u.pass+" ~* &* +@all")
		}
		if s.mode == modeCluster {
			lines = append(lines,
				"cluster-enabled yes",
				"cluster-config-file nodes.conf",
				"cluster-node-timeout "+itoa(int(s.opts.clusterTimeout/time.Millisecond)))
		}
	}
	lines = append(lines, s.extra...)
	for _, kv := range s.opts.config {
		v := kv[1]
		if v == "" {
			v = `""`
		}
		lines = append(lines, kv[0]+" "+v)
	}
	return os.WriteFile(filepath.Join(s.dir, confFileName), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// appendConfig appends a line to the config file; it takes effect at the next
// Restart and overrides earlier lines (including those a CONFIG REWRITE put
// there).
func (s *Server) appendConfig(line string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	f, err := os.OpenFile(filepath.Join(s.dir, confFileName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString("\n" + line + "\n")
	return errors.Join(err, f.Close())
}

func itoa(n int) string { return strconv.Itoa(n) }

// quote returns s as a redis.conf argument: bare when it is plain, else in
// double quotes with backslash escapes.
func quote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\r\n\"'\\") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

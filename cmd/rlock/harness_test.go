//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// testTimeout bounds every wait of a test for something that should happen; reaching it is a failure, never the
// way a test synchronises.
const testTimeout = 20 * time.Second

// lineStream is a pipe whose read side is split into lines by a goroutine, so a test can await a line.
type lineStream struct {
	mu    sync.Mutex // guards w
	w     *os.File
	lines chan string   // closed at EOF
	done  chan struct{} // closed when the reader goroutine has exited
}

func newLineStream(t *testing.T) *lineStream {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &lineStream{w: w, lines: make(chan string, 1024), done: make(chan struct{})}
	// Owner: the test (via lineStream). Exits at EOF, once every copy of the write side is closed (the test's in
	// closeWriter, the command's when it exits); waited for in the cleanup.
	go func() {
		defer close(s.done)
		defer close(s.lines)
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		s.closeWriter()
		select {
		case <-s.done:
		case <-time.After(testTimeout):
			t.Error("a process the test started still holds an output pipe open")
		}
	})
	return s
}

func (s *lineStream) closeWriter() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil {
		s.w.Close()
		s.w = nil
	}
}

// next returns the next line, failing the test if none comes within testTimeout or the stream ended.
func (s *lineStream) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			t.Fatal("stream ended while a line was expected")
		}
		return l
	case <-time.After(testTimeout):
		t.Fatal("no line within the test timeout")
	}
	return ""
}

// expect reads lines until one equals want, failing on EOF or timeout. It returns the lines skipped.
func (s *lineStream) expect(t *testing.T, want string) []string {
	t.Helper()
	var skipped []string
	for {
		l := s.next(t)
		if l == want {
			return skipped
		}
		skipped = append(skipped, l)
	}
}

// rest returns the remaining lines up to EOF (the writer must have been closed).
func (s *lineStream) rest(t *testing.T) []string {
	t.Helper()
	var out []string
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				return out
			}
			out = append(out, l)
		case <-time.After(testTimeout):
			t.Fatal("stream did not end within the test timeout")
		}
	}
}

// jsonEvent is a decoded -json line.
type jsonEvent map[string]any

func (e jsonEvent) str(k string) string {
	s, _ := e[k].(string)
	return s
}

func (e jsonEvent) num(k string) (float64, bool) {
	n, ok := e[k].(float64)
	return n, ok
}

func parseEvent(t *testing.T, line string) jsonEvent {
	t.Helper()
	var e jsonEvent
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatalf("not a JSON event: %q: %v", line, err)
	}
	if e.str("event") == "" {
		t.Fatalf("event without a name: %q", line)
	}
	if _, ok := e.num("time_ms"); !ok {
		t.Fatalf("event without time_ms: %q", line)
	}
	return e
}

// nextEvent reads JSON events until one named name, returning it.
func (s *lineStream) nextEvent(t *testing.T, name string) jsonEvent {
	t.Helper()
	for {
		e := parseEvent(t, s.next(t))
		if e.str("event") == name {
			return e
		}
	}
}

// harness runs rlock in-process against a fakeLocker, with the command's and rlock's output on line streams and
// signals injected through the channel rlock registers.
type harness struct {
	fake     *fakeLocker
	env      *env
	stdout   *lineStream
	stderr   *lineStream
	sigReg   chan chan<- os.Signal // the channel of each notify call
	terminal func(os.Signal) bool  // nil: no signal comes from a terminal

	mu     sync.Mutex
	dials  int
	cfg    rlock.Config
	dialFn func(rlock.Config) (locker, error) // nil: the fake
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { devnull.Close() })
	h := &harness{fake: newFakeLocker(), stdout: newLineStream(t), stderr: newLineStream(t),
		sigReg: make(chan chan<- os.Signal, 4)}
	h.env = &env{
		stdin: devnull, stdout: h.stdout.w, stderr: h.stderr.w,
		getenv:  func(k string) string { return "" },
		environ: append(os.Environ(), helperEnv+"=1", goraceEnv()),
		dial: func(cfg rlock.Config) (locker, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.dials++
			h.cfg = cfg
			if h.dialFn != nil {
				return h.dialFn(cfg)
			}
			return h.fake, nil
		},
		notify:     func(c chan<- os.Signal, _ ...os.Signal) { h.sigReg <- c },
		stopNotify: func(chan<- os.Signal) {},
		fromTerminal: func(s os.Signal) bool {
			return h.terminal != nil && h.terminal(s)
		},
	}
	return h
}

// goraceEnv returns the GORACE setting for processes the tests start: without atexit_sleep_ms=0, a binary built
// with -race sleeps one second before it exits.
func goraceEnv() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}

// helper returns the argv that runs this test binary's helper in mode.
func helper(t *testing.T, mode ...string) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{self}, mode...)
}

// running is an rlock run in progress.
type running struct {
	code     chan int
	finished chan struct{} // closed when run has returned
	h        *harness
}

// start runs rlock with args on a goroutine.
func (h *harness) start(t *testing.T, args ...string) *running {
	t.Helper()
	r := &running{code: make(chan int, 1), finished: make(chan struct{}), h: h}
	// Owner: the test. Exits when run returns; wait receives the code, and the cleanup below ends a run that a
	// failed test left behind.
	go func() {
		defer close(r.finished)
		r.code <- run(args, h.env)
	}()
	t.Cleanup(func() {
		select {
		case <-r.finished:
			return
		default:
		}
		// SIGKILL is forwarded to a running command; SIGTERM ends a wait.
		select {
		case c := <-h.sigReg:
			c <- syscall.SIGKILL
			c <- syscall.SIGTERM
		default:
		}
		select {
		case <-r.finished:
		case <-time.After(testTimeout):
			t.Error("rlock run still going after the test")
		}
	})
	return r
}

// wait returns rlock's exit code and closes the write sides of the streams, so that rest() ends.
func (r *running) wait(t *testing.T) int {
	t.Helper()
	select {
	case c := <-r.code:
		r.h.stdout.closeWriter()
		r.h.stderr.closeWriter()
		return c
	case <-time.After(testTimeout):
		t.Fatal("rlock did not return within the test timeout")
	}
	return -1
}

// signal delivers s to the run as the OS would, once rlock has registered its signal channel.
func (r *running) signal(t *testing.T, s os.Signal) {
	t.Helper()
	c := r.sigChan(t)
	c <- s
	r.h.sigReg <- c // keep it for the next call
}

func (r *running) sigChan(t *testing.T) chan<- os.Signal {
	t.Helper()
	select {
	case c := <-r.h.sigReg:
		return c
	case <-time.After(testTimeout):
		t.Fatal("rlock did not register for signals")
	}
	return nil
}

// runSync runs rlock to the end and returns its code, stdout lines and stderr lines.
func (h *harness) runSync(t *testing.T, args ...string) (int, []string, []string) {
	t.Helper()
	code := h.start(t, args...).wait(t)
	return code, h.stdout.rest(t), h.stderr.rest(t)
}

func (h *harness) dialCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dials
}

// joined is a failure-message helper.
func joined(lines []string) string { return strings.Join(lines, "\n") }

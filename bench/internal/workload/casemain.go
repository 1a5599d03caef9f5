package workload

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Message is one line a case process writes on its standard output. With
// -sync, it writes {"event":"begin"} and {"event":"end"} at the window's edges
// and waits for one line on its standard input after each (the orchestrator
// samples the server meanwhile); it always ends with {"event":"record"}.
//
// A process of a spread case (RunSpread) gets "go <unix nanos>" after begin:
// the common instant at which every process opens its window; its record
// comes with the detail RunSpread merges.
type Message struct {
	Event  string         `json:"event"`
	Record *Record        `json:"record,omitempty"`
	Detail *ProcessDetail `json:"detail,omitempty"`
}

// Message events.
const (
	EventBegin  = "begin"
	EventEnd    = "end"
	EventRecord = "record"
)

// CaseFlags are the command-line flags of a case process, shared by the
// orchestrator (which writes them) and CaseMain (which parses them).
type CaseFlags struct {
	Addr        string
	Spec        Spec
	Lease       time.Duration
	WatchdogTTL time.Duration
	Sync        bool
}

// Args renders f as the arguments CaseMain parses.
func (f CaseFlags) Args() []string {
	s := f.Spec
	return []string{
		"-addr", f.Addr, "-workload", s.Workload, "-lib", s.Library,
		"-g", fmt.Sprint(s.Goroutines), "-keys", fmt.Sprint(s.Keys),
		"-duration", s.Duration.String(), "-warmup", s.Warmup.String(),
		"-hold", s.Hold.String(), "-run-id", s.RunID,
		"-lease", f.Lease.String(), "-ttl", f.WatchdogTTL.String(),
		fmt.Sprintf("-sync=%t", f.Sync), "-procs", fmt.Sprint(s.Procs),
		"-process", fmt.Sprint(s.Process), "-processes", fmt.Sprint(max(s.Processes, 1)),
		"-check", s.CheckAddr, "-cs-hold", s.CSHold.String(), "-trace-dir", s.TraceDir,
	}
}

// CaseMain runs one case in this process, as the "case" subcommand of the
// bench binary and of the peers binary: it parses args, builds the library
// named by -lib from factories (keyed by the name before any ':'), runs the
// case and writes the messages described at Message to stdout. It blocks
// until the case is over and returns the process exit code.
func CaseMain(args []string, factories map[string]Factory, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("case", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f CaseFlags
	s := &f.Spec
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:6379", "redis-server address")
	fs.StringVar(&s.Workload, "workload", UncontendedPairs, "workload: w1, w2, w3, w4, w5 or raw")
	fs.StringVar(&s.Library, "lib", "", "library (name[:variant]): "+strings.Join(names(factories), ", "))
	fs.IntVar(&s.Goroutines, "g", 1, "goroutines")
	fs.IntVar(&s.Keys, "keys", 1, "keys (W2/W4: shared keys; W3: locks held; W5: keys in flight)")
	fs.DurationVar(&s.Duration, "duration", 5*time.Second, "measurement window")
	fs.DurationVar(&s.Warmup, "warmup", time.Second, "warm-up before the window")
	fs.DurationVar(&s.Hold, "hold", 30*time.Second, "W3: how long the locks are held")
	fs.StringVar(&s.RunID, "run-id", "", "key prefix for this case")
	fs.DurationVar(&f.Lease, "lease", 10*time.Second, "fixed lease of libraries without a watchdog")
	fs.DurationVar(&f.WatchdogTTL, "ttl", 3*time.Second, "W3: watchdog lease (key TTL)")
	fs.BoolVar(&f.Sync, "sync", false, "handshake with the orchestrator at the window's edges")
	fs.IntVar(&s.Procs, "procs", 0, "GOMAXPROCS of this process (0: Go's default)")
	fs.IntVar(&s.Process, "process", 0, "W2x/W4x: this process's index among -processes")
	fs.IntVar(&s.Processes, "processes", 1, "W2x/W4x: processes running the case together")
	fs.StringVar(&s.CheckAddr, "check", "", "W2/W4: server for the exclusion check inside the critical section (empty: in-process checks only)")
	fs.DurationVar(&s.CSHold, "cs-hold", 0, "W2/W4: time spent inside the critical section besides the checks")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole case to this file (for go tool pprof)")
	fs.StringVar(&s.TraceDir, "trace-dir", "", "write a runtime trace of the whole case into this directory (for go tool trace)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if s.Processes < 1 || s.Process < 0 || s.Process >= s.Processes {
		fmt.Fprintf(stderr, "case: -process %d of -processes %d: want 0 <= process < processes\n", s.Process, s.Processes)
		return 2
	}
	if s.Procs < 0 {
		fmt.Fprintf(stderr, "case: -procs %d: want 0 (Go's default) or a positive GOMAXPROCS\n", s.Procs)
		return 2
	}
	if s.Procs > 0 {
		// Before the library starts any goroutine or event loop.
		runtime.GOMAXPROCS(s.Procs)
	}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "case:", err)
			return 2
		}
		defer stopProfile()
	}
	if s.TraceDir != "" {
		stopTrace, err := startTrace(filepath.Join(s.TraceDir, TraceFile(*s, os.Getpid())))
		if err != nil {
			fmt.Fprintf(stderr, "case: -trace-dir %s: %v\n", s.TraceDir, err)
			return 2
		}
		defer stopTrace()
	}
	base, variant, _ := strings.Cut(s.Library, ":")
	factory, ok := factories[base]
	if !ok {
		fmt.Fprintf(stderr, "case: unknown library %q (have %s)\n", s.Library, strings.Join(names(factories), ", "))
		return 2
	}
	// The orchestrator stops a case by SIGTERM (then SIGKILL) when it overruns.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	out := json.NewEncoder(stdout)
	var win Window = NopWindow{}
	if f.Sync {
		win = &stdioWindow{in: bufio.NewReader(stdin), out: out}
	}
	goroutines := s.Goroutines
	if s.Workload == HeldMany {
		goroutines = defaultAcquirers
	}
	rec, detail, err := runCase(ctx, factory, Config{
		Addr: f.Addr, Variant: variant, Lease: f.Lease, WatchdogTTL: f.WatchdogTTL,
		Workload: s.Workload, Goroutines: max(goroutines, 1),
	}, *s, win)
	if err != nil {
		rec.Errors++
		if rec.ErrorSample == "" {
			rec.ErrorSample = err.Error()
		}
		fmt.Fprintln(stderr, "case:", err)
	}
	if err := out.Encode(Message{Event: EventRecord, Record: &rec, Detail: detail}); err != nil {
		fmt.Fprintln(stderr, "case: writing the record:", err)
		return 1
	}
	return 0
}

// runCase builds the library, runs the case and closes the library (bounded:
// a library whose Close hangs does not hold the record back).
func runCase(ctx context.Context, factory Factory, cfg Config, spec Spec, win Window) (Record, *ProcessDetail, error) {
	rec := Record{Workload: spec.Workload, Library: spec.Library, Goroutines: spec.Goroutines,
		Keys: spec.Keys, ClientCmds: -1}
	stamp := func(r *Record) { r.GOMAXPROCS, r.GOMAXPROCSSet = runtime.GOMAXPROCS(0), spec.Procs > 0 }
	stamp(&rec)
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	lib, err := factory(dctx, cfg)
	cancel()
	if errors.Is(err, ErrUnsupported) {
		rec.NotApplicable = err.Error()
		return rec, nil, nil
	}
	if err != nil {
		return rec, nil, fmt.Errorf("starting %s: %w", spec.Library, err)
	}
	var detail *ProcessDetail
	rec, detail, err = RunDetailed(ctx, lib, spec, win)
	stamp(&rec)
	if d, ok := lib.(Describer); ok {
		rec.Config = d.Describe()
	}
	closed := make(chan error, 1)
	// Owned by runCase: ends when Close returns; not waited for past the
	// bound, since the process exits right after the record is written.
	go func() { closed <- lib.Close() }()
	select {
	case cerr := <-closed:
		if cerr != nil && err == nil && rec.NotApplicable == "" {
			rec.Notes = append(rec.Notes, "close: "+cerr.Error())
		}
	case <-time.After(spec.StopGrace + DefaultStopGrace):
		rec.Notes = append(rec.Notes, "close did not return")
	}
	return rec, detail, err
}

// stdioWindow is the case side of the window handshake.
type stdioWindow struct {
	in    *bufio.Reader
	out   *json.Encoder
	start time.Time // the common start instant of a spread case (zero: none)
}

// Begin signals readiness and waits for the answer: "go", or "go <unix
// nanos>" (a spread case), after which it waits for that instant.
func (w *stdioWindow) Begin() error {
	line, err := w.handshake(EventBegin)
	if err != nil {
		return err
	}
	if f := strings.Fields(line); len(f) == 2 {
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return fmt.Errorf("the orchestrator's start instant %q: %w", f[1], err)
		}
		w.start = time.Unix(0, ns)
		time.Sleep(time.Until(w.start))
	}
	return nil
}

func (w *stdioWindow) End() error {
	_, err := w.handshake(EventEnd)
	return err
}

// StartAt returns the common start instant Begin waited for (zero: none).
func (w *stdioWindow) StartAt() time.Time { return w.start }

func (w *stdioWindow) handshake(event string) (string, error) {
	if err := w.out.Encode(Message{Event: event}); err != nil {
		return "", err
	}
	line, err := w.in.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("waiting for the orchestrator after %q: %w", event, err)
	}
	return line, nil
}

func names(factories map[string]Factory) []string {
	out := make([]string, 0, len(factories))
	for n := range factories {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// startCPUProfile starts profiling the process's CPU into path and returns the function that stops it and
// closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	return recordInto(path, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// TraceFile names the runtime trace of the case process pid running s:
// workload, library, goroutines, process index and pid, so that the traces of
// every process of every run of a case can share one directory.
func TraceFile(s Spec, pid int) string {
	lib := strings.NewReplacer(":", "_", "/", "_").Replace(s.Library)
	return fmt.Sprintf("%s-%s-g%d-p%d-%d.trace", s.Workload, lib, s.Goroutines, s.Process, pid)
}

// startTrace starts a runtime trace of the process into path, making its directory if needed, and returns the
// function that stops it and closes the file.
func startTrace(path string) (stop func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return recordInto(path, trace.Start, trace.Stop)
}

// recordInto creates path, starts a recording into it (a CPU profile, a runtime trace) and returns the function
// that ends the recording and closes the file.
func recordInto(path string, start func(io.Writer) error, end func()) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		end()
		f.Close()
	}, nil
}

package workload

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Workload names: the values of the bench command's -workloads flag and of a
// record's workload field. The short codes (w1 ... w5, w2x, w4x) are how the
// bench's tables, flags and README name the workloads; the constants say what
// each measures.
const (
	UncontendedPairs = "w1"  // W1: uncontended lock+unlock pairs, one key per goroutine
	ContendedKeys    = "w2"  // W2: contended: blocking acquire on few keys, mutual exclusion, fairness
	HeldMany         = "w3"  // W3: N locks held under a watchdog
	Handoff          = "w4"  // W4: hand-off latency: unlock to the next waiter holding the lock
	AsyncPairs       = "w5"  // W5: async: one goroutine issuing LockAsync/UnlockAsync over many keys
	Raw              = "raw" // W1's loop over a bare transport (EVALSHA acquire+release)

	// W2 and W4 with the contenders spread over processes (W2x, W4x):
	// Spec.Processes processes of Spec.Goroutines goroutines each, every
	// process its own client of the library, one common window (RunSpread).
	ContendedKeysSpread = "w2x"
	HandoffSpread       = "w4x"
)

// Contended reports whether w is W2 or W4, in one process or spread over
// several.
func Contended(w string) bool {
	return w == ContendedKeys || w == Handoff || w == ContendedKeysSpread || w == HandoffSpread
}

// Spread reports whether w runs its contenders in several processes.
func Spread(w string) bool { return w == ContendedKeysSpread || w == HandoffSpread }

// Defaults for Spec fields left zero.
const (
	DefaultStallAge  = time.Second     // an operation older than this at window end is "stalled"/"waiting"
	DefaultStopGrace = 5 * time.Second // how long workers get to return after the window
	defaultAcquirers = 64              // W3: goroutines taking the N locks
)

// Spec describes one case.
type Spec struct {
	Workload   string
	Library    string // full name, variant included ("redsync:1ms")
	Goroutines int    // W1/W2/W4/raw: worker goroutines (per process for W2x/W4x); W5: always 1
	Keys       int    // W2/W4: keys shared by the workers (of every process); W5: keys in flight; W3: N
	Duration   time.Duration
	Warmup     time.Duration
	Hold       time.Duration // W3: how long the N locks are held
	// AcquireTimeout bounds W3's acquisitions and releases; 0 means
	// AcquireBudget(N).
	AcquireTimeout time.Duration
	RunID          string // prefix that keeps this case's keys apart from any other's
	// Procs is the case process's GOMAXPROCS; 0 leaves Go's default (the
	// CPUs the process may use).
	Procs int
	// Process is this process's index among Processes (W2x, W4x): goroutine
	// i of process p is contender p×Goroutines+i of the case, which picks the
	// key and names the holder in the server-side check.
	Process   int
	Processes int
	// CheckAddr, when set, is the server on which W2 and W4 check exclusion
	// inside the critical section (owner marker, non-atomic counter, grant
	// order: see checker.go); empty leaves only the in-process checks.
	CheckAddr string
	// CSHold is how long a W2/W4 holder stays inside its critical section
	// besides the checks, yielding the processor meanwhile (0: no hold).
	CSHold    time.Duration
	StallAge  time.Duration
	StopGrace time.Duration
	// TraceDir, when set, is where the case process writes a runtime trace
	// of the whole case (go tool trace): one file per process, named by
	// TraceFile. Timestamps are the monotonic clock's, so the traces of a
	// spread case's processes line up.
	TraceDir string
}

func (s *Spec) defaults() {
	if s.StallAge <= 0 {
		s.StallAge = DefaultStallAge
	}
	if s.StopGrace <= 0 {
		s.StopGrace = DefaultStopGrace
	}
	if s.RunID == "" {
		s.RunID = fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffff)
	}
}

// key returns the name of lock i of this case.
func (s *Spec) key(i int) string { return fmt.Sprintf("bench:%s:%s:%d", s.RunID, s.Workload, i) }

// Window lets an orchestrator sample the server and the machine at the edges
// of the measurement window. Both calls block until the samples are taken.
type Window interface {
	Begin() error
	End() error
}

// ScheduledWindow is a Window whose Begin waits for a start instant shared
// by several processes (RunSpread's): the window then ends at that instant
// plus the duration in every process, whenever each of them woke up.
type ScheduledWindow interface {
	Window
	// StartAt returns the instant the last Begin waited for (zero: none).
	StartAt() time.Time
}

// NopWindow is a Window for running a case alone (no orchestrator).
type NopWindow struct{}

// Begin returns nil at once.
func (NopWindow) Begin() error { return nil }

// End returns nil at once.
func (NopWindow) End() error { return nil }

// Run runs one case against lib and returns its record. It blocks for the
// warm-up, the window and the teardown; ctx ends it early (the record then
// covers what was measured). lib is not closed.
func Run(ctx context.Context, lib Library, spec Spec, win Window) (Record, error) {
	r, _, err := RunDetailed(ctx, lib, spec, win)
	return r, err
}

// RunDetailed is Run that also returns, for W2 and W4 (in one process or
// spread), what RunSpread needs to merge the processes of a case: the
// per-goroutine counts, the latency histogram, the grant order. The detail
// is nil for the other workloads.
func RunDetailed(ctx context.Context, lib Library, spec Spec, win Window) (Record, *ProcessDetail, error) {
	spec.defaults()
	r := Record{
		Workload: spec.Workload, Library: spec.Library,
		Goroutines: spec.Goroutines, Keys: spec.Keys, ClientCmds: -1,
	}
	if win == nil {
		win = NopWindow{}
	}
	var err error
	var d *ProcessDetail
	switch spec.Workload {
	case UncontendedPairs, Raw:
		err = runPairs(ctx, lib, spec, win, &r)
	case ContendedKeys, ContendedKeysSpread:
		d, err = runContended(ctx, lib, spec, win, &r)
	case HeldMany:
		err = runHeld(ctx, lib, spec, win, &r)
	case Handoff, HandoffSpread:
		d, err = runHandoff(ctx, lib, spec, win, &r)
	case AsyncPairs:
		err = runAsync(ctx, lib, spec, win, &r)
	default:
		return r, nil, fmt.Errorf("workload: unknown workload %q (want w1..w5, w2x, w4x or raw)", spec.Workload)
	}
	if errors.Is(err, ErrUnsupported) {
		r.NotApplicable = err.Error()
		return r, nil, nil
	}
	return r, d, err
}

// window tracks the measurement window of a case: its phase (read by the
// workers on every operation) and what the case process measured at its
// edges.
type window struct {
	phase   atomic.Int32 // phaseWarmup -> phaseOpen -> phaseClosed
	start   time.Time    // written by the case's main goroutine only
	planned time.Time    // the common start instant of a spread case's processes (zero: none)
	end     time.Time
	cpu0    time.Duration
	cpu1    time.Duration
	cmds0   uint64
	cmds1   uint64
	counter CommandCounter // nil when the adapter cannot count commands
}

const (
	phaseWarmup int32 = iota
	phaseOpen
	phaseClosed
)

func newWindow(lib Library) *window {
	w := &window{}
	if c, ok := lib.(CommandCounter); ok {
		if _, counts := c.Commands(); counts {
			w.counter = c
		}
	}
	return w
}

// open signals the orchestrator, then opens the window.
func (w *window) open(win Window) error {
	if err := win.Begin(); err != nil {
		return fmt.Errorf("workload: window begin: %w", err)
	}
	w.cpu0 = ProcessCPU()
	w.start = time.Now()
	if sw, ok := win.(ScheduledWindow); ok {
		w.planned = sw.StartAt()
	}
	// The command count is read right next to the phase change (not before the getrusage above), so the commands
	// counted and the operations counted cover the same interval, up to the operations in flight at its edges.
	if w.counter != nil {
		w.cmds0, _ = w.counter.Commands()
	}
	w.phase.Store(phaseOpen)
	return nil
}

// shut closes the window: workers stop counting, and the case process's
// end-of-window figures are taken. The orchestrator is signalled by signalEnd,
// after the case has looked at what was still in flight.
func (w *window) shut() {
	w.phase.Store(phaseClosed)
	if w.counter != nil {
		w.cmds1, _ = w.counter.Commands()
	}
	w.end = time.Now()
	w.cpu1 = ProcessCPU()
}

// signalEnd tells the orchestrator the window is closed and waits for its
// samples.
func (w *window) signalEnd(win Window) error {
	if err := win.End(); err != nil {
		return fmt.Errorf("workload: window end: %w", err)
	}
	return nil
}

func (w *window) measuring() bool { return w.phase.Load() == phaseOpen }

// await sleeps until the window has lasted d, counted from the common start
// instant when there is one (so that every process of a spread case closes
// its window at the same instant), and reports whether it did.
func (w *window) await(ctx context.Context, d time.Duration) bool {
	from := w.start
	if !w.planned.IsZero() {
		from = w.planned
	}
	return sleepCtx(ctx, time.Until(from.Add(d)))
}

// fill sets the record's window-derived fields for ops operations.
func (w *window) fill(r *Record, ops int64) {
	if w.start.IsZero() || w.end.IsZero() {
		return // the window never opened (ctx ended during the warm-up)
	}
	wall := w.end.Sub(w.start)
	r.Ops = ops
	r.WindowSec = wall.Seconds()
	if wall > 0 {
		r.OpsPerSec = float64(ops) / wall.Seconds()
	}
	r.ClientCPUSeconds = (w.cpu1 - w.cpu0).Seconds()
	r.ClientCPU = Cores(w.cpu1-w.cpu0, wall)
	if w.counter != nil {
		r.ClientCmds = int64(w.cmds1 - w.cmds0)
		if ops > 0 {
			r.ClientCmdsPerOp = float64(r.ClientCmds) / float64(ops)
		}
	}
}

// sleepCtx waits for d or until ctx ends; it reports whether d elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// errorLog counts errors and keeps the first message. Safe for concurrent use.
type errorLog struct {
	n     atomic.Int64
	once  sync.Once
	first string
	mu    sync.Mutex // guards first after once
}

func (e *errorLog) add(err error) {
	e.n.Add(1)
	e.once.Do(func() {
		e.mu.Lock()
		e.first = err.Error()
		e.mu.Unlock()
	})
}

func (e *errorLog) fill(r *Record) {
	r.Errors = e.n.Load()
	e.mu.Lock()
	r.ErrorSample = e.first
	e.mu.Unlock()
}

// errorBackoff is how long a worker pauses after an error that is neither a
// give-up nor the end of its context, so that a failing library (server gone,
// refused connections) does not turn the case into a busy loop.
const errorBackoff = time.Millisecond

// sampler records the peak goroutine count and heap of the process while a
// case runs, through runtime/metrics (no stop-the-world).
type sampler struct {
	stop     chan struct{}
	done     chan struct{}
	every    time.Duration
	peakG    int    // written by the sampler goroutine, read after done
	peakHeap uint64 // idem
}

// The sampler's intervals. Cases whose tables show the peaks (W1, W3, W5)
// sample finely. The contention cases' tables do not show them (the JSON
// report keeps them), and there the sampler would be part of what is measured:
// in W2x at 64 processes a 10 ms ticker wakes sleeping processes 6,400 times a
// second on a small machine, CPU taken from the very wake-ups a lock that
// serves waiters in order depends on (ours' 64×1 throughput rose by about a
// quarter without it; see bench/README.md), so they sample coarsely.
const (
	samplerInterval           = 10 * time.Millisecond
	contentionSamplerInterval = 250 * time.Millisecond
)

// startSampler starts sampling every interval.
func startSampler(every time.Duration) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{}), every: every}
	// Owned by the case: ends when finish closes stop, waited for in finish.
	go s.loop()
	return s
}

func (s *sampler) loop() {
	defer close(s.done)
	samples := []metrics.Sample{
		{Name: "/sched/goroutines:goroutines"},
		{Name: "/memory/classes/heap/objects:bytes"},
	}
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		metrics.Read(samples)
		if g := int(samples[0].Value.Uint64()); g > s.peakG {
			s.peakG = g
		}
		if h := samples[1].Value.Uint64(); h > s.peakHeap {
			s.peakHeap = h
		}
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// finish stops the sampler and fills the record's peaks.
func (s *sampler) finish(r *Record) {
	close(s.stop)
	<-s.done
	r.GoroutinesPeak = s.peakG
	r.HeapPeakBytes = s.peakHeap
}

// waitGroupFor waits for wg up to grace and reports whether it finished.
func waitGroupFor(wg *sync.WaitGroup, grace time.Duration) bool {
	done := make(chan struct{})
	// Owned by waitGroupFor: ends when wg does; if wg never does (workers stuck
	// in a library), the process exits soon after the record is printed.
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// heapSnapshot forces a collection and reads the live heap, the goroutine
// stacks and the goroutine count (W3's mid-hold figures).
func heapSnapshot() (heap, stack uint64, goroutines int) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse, runtime.NumGoroutine()
}

// shards is the number of latency histogram shards for g workers.
func shards(g int) int { return min(max(g, 1), 4*runtime.GOMAXPROCS(0)) }

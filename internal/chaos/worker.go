package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/rlock"
)

// WorkerConfig configures one worker process: Goroutines goroutines that each repeatedly pick a lock and an
// acquire form at random, hold the lock for a while watching the held context, release it, and log each step.
type WorkerConfig struct {
	Proc            int           // this worker's index (the orchestrator's name for it)
	Addr            string        // redis-server (or the proxy in front of it)
	Locks           []string      // lock names
	Goroutines      int           // default 4
	Watchdog        time.Duration // rlock WatchdogTimeout; default 2 s
	Lease           time.Duration // lease of the lease forms; default 1.5 s
	ResponseTimeout time.Duration // conn ResponseTimeout; default 500 ms
	WaitBound       time.Duration // wait of each acquire; default 2 s
	HoldMin         time.Duration // default 2 ms
	HoldMax         time.Duration // default 30 ms
	CheckEvery      time.Duration // how often a holder checks its held context; default 1 ms
	// LongHolds is the fraction of holds that last between half the watchdog timeout and 1.5 × the longest
	// lease: they span watchdog renewals and outlive fixed leases (whose contexts must then end before the
	// server lets the next holder in), and they are the holds that faults catch in the middle.
	LongHolds float64
	Plain     float64 // fraction of acquires made with the plain Lock instead of the FencedLock
	// UnlockLost is the fraction of holds whose context ended before release that are released all the same
	// (the lock may still be on the server when it expired only locally); the others are left to the server's
	// lease, so that the next holder is let in by the server's expiry, not by a release.
	UnlockLost float64
	Tolerance  time.Duration // the monitor reports an acquire pending past bound + Tolerance; default 1 s
	StatEvery  time.Duration // stat record period; default 2 s
	// Forms restricts the acquire forms to a comma-separated list of lock, try, trylease, locklease, async,
	// nowait; empty: all of them.
	Forms   string
	LogPath string
	Seed    uint64
}

func (c *WorkerConfig) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Goroutines == 0 {
		c.Goroutines = 4
	}
	def(&c.Watchdog, 2*time.Second)
	def(&c.Lease, 1500*time.Millisecond)
	def(&c.ResponseTimeout, 500*time.Millisecond)
	def(&c.WaitBound, 2*time.Second)
	def(&c.HoldMin, 2*time.Millisecond)
	def(&c.HoldMax, 30*time.Millisecond)
	def(&c.CheckEvery, time.Millisecond)
	def(&c.Tolerance, DefaultWaitTolerance)
	def(&c.StatEvery, 2*time.Second)
}

// acquire forms a worker picks from.
type form uint8

const (
	formLock      form = iota // Lock(ctx): the watchdog; the context's deadline is the wait bound
	formTryWD                 // TryLock(ctx, bound, 0): the watchdog, rlock's own wait deadline
	formTryLease              // TryLock(ctx, bound, lease)
	formLockLease             // LockLease(ctx, lease); the context's deadline is the wait bound
	formAsync                 // TryLockAsync(ctx, bound, 0) then Get
	formNoWait                // TryLock(ctx, 0, 0): one attempt
	numForms
)

var formNames = [numForms]string{"Lock", "TryLock(wait)", "TryLock(wait,lease)", "LockLease", "TryLockAsync(wait)",
	"TryLock(0)"}

// formFlags are the names WorkerConfig.Forms uses for the forms, in form order.
var formFlags = [numForms]string{"lock", "try", "trylease", "locklease", "async", "nowait"}

// parseForms turns a comma-separated list of form flags into forms; empty means all.
func parseForms(list string) ([]form, error) {
	if list == "" {
		return nil, nil
	}
	var out []form
	for _, name := range strings.Split(list, ",") {
		i := slices.Index(formFlags[:], name)
		if i < 0 {
			return nil, fmt.Errorf("chaos: unknown acquire form %q (known: %s)", name, strings.Join(formFlags[:], ","))
		}
		out = append(out, form(i))
	}
	return out, nil
}

// slot is what the monitor sees of one goroutine's acquire in progress.
type slot struct {
	waitStart atomic.Int64 // 0 when not acquiring
	bound     atomic.Int64
	seq       atomic.Int64
	lock      atomic.Value // string
	reported  atomic.Bool
}

type worker struct {
	cfg     WorkerConfig
	forms   []form
	c       *rlock.Client
	log     *Log
	slots   []slot
	holding atomic.Int64
	ops     atomic.Int64
	sched   atomic.Int64
}

// RunWorker runs a worker until ctx ends, then lets every goroutine finish its operation (an acquire in progress
// ends with ctx's error, a holder releases), closes the client and writes the exit record. It writes
// "ready <clientID>" to out once the client is connected, so that the orchestrator can map lock owners (whose
// field on the server starts with the client id) to workers. It blocks until done.
func RunWorker(ctx context.Context, cfg WorkerConfig, out io.Writer) error {
	cfg.defaults()
	if len(cfg.Locks) == 0 || cfg.LogPath == "" || cfg.Addr == "" {
		return errors.New("chaos: worker needs an address, locks and a log path")
	}
	forms, err := parseForms(cfg.Forms)
	if err != nil {
		return err
	}
	lg, err := CreateLog(cfg.LogPath)
	if err != nil {
		return err
	}
	c, err := rlock.NewClient(rlock.Config{
		Conn:            conn.Config{Addr: cfg.Addr, ResponseTimeout: cfg.ResponseTimeout},
		WatchdogTimeout: cfg.Watchdog,
	})
	if err != nil {
		lg.Close()
		return fmt.Errorf("chaos: worker %d: %w", cfg.Proc, err)
	}
	w := &worker{cfg: cfg, forms: forms, c: c, log: lg, slots: make([]slot, cfg.Goroutines)}
	fmt.Fprintf(out, "ready %s\n", c.ID())

	var wg sync.WaitGroup
	for g := range cfg.Goroutines {
		wg.Add(1)
		go func() { // owner: RunWorker; exits when ctx ends and its operation is over
			defer wg.Done()
			w.loop(ctx, g)
		}()
	}
	stopAux := make(chan struct{})
	var aux sync.WaitGroup
	aux.Add(2)
	go func() { // owner: RunWorker; exits when stopAux closes
		defer aux.Done()
		w.monitor(stopAux)
	}()
	go func() { // owner: RunWorker; exits when stopAux closes
		defer aux.Done()
		w.probe(stopAux)
	}()

	wg.Wait()
	close(stopAux)
	aux.Wait()
	cerr := c.Close()
	w.log.Write(&Record{Kind: KindExit, Proc: cfg.Proc, PID: pid(), Ops: w.ops.Load(), At: Now(),
		Goroutines: runtime.NumGoroutine()})
	return errors.Join(cerr, lg.Close())
}

// loop is one goroutine's life: operations until ctx ends.
func (w *worker) loop(ctx context.Context, g int) {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, uint64(w.cfg.Proc)<<32|uint64(g)))
	tm := time.NewTimer(time.Hour)
	defer tm.Stop()
	var seq int64
	for ctx.Err() == nil {
		seq++
		lock := w.cfg.Locks[rng.IntN(len(w.cfg.Locks))]
		w.op(ctx, g, seq, lock, rng, tm)
	}
}

// op makes one acquire and, if it got the lock, holds it and releases it.
func (w *worker) op(ctx context.Context, g int, seq int64, lock string, rng *rand.Rand, tm *time.Timer) {
	cfg := &w.cfg
	f := form(rng.IntN(int(numForms)))
	if len(w.forms) > 0 {
		f = w.forms[rng.IntN(len(w.forms))]
	}
	plain := rng.Float64() < cfg.Plain
	bound := cfg.WaitBound/2 + time.Duration(rng.Int64N(int64(cfg.WaitBound/2)+1))
	rec := Record{Kind: KindAcquired, Lock: lock, Proc: cfg.Proc, G: g, Seq: seq, WaitBound: int64(bound),
		Form: "fenced:" + formNames[f]}
	if plain {
		rec.Form = "plain:" + formNames[f]
	}
	if f == formTryLease || f == formLockLease {
		rec.Lease = int64(cfg.Lease)
	}

	s := &w.slots[g]
	s.lock.Store(lock)
	s.seq.Store(seq)
	s.bound.Store(int64(bound))
	s.reported.Store(false)
	rec.WaitStart = Now()
	s.waitStart.Store(rec.WaitStart)
	held, token, err := w.acquire(ctx, lock, f, plain, bound)
	end := Now()
	s.waitStart.Store(0)
	w.ops.Add(1)
	if err != nil {
		rec.Kind, rec.End, rec.Outcome, rec.Err = KindWait, end, waitOutcome(err), err.Error()
		w.log.Write(&rec)
		if rec.Outcome == OutError {
			// The server is unreachable or failing: do not spin on instant failures.
			pause(ctx, tm, 20*time.Millisecond)
		}
		return
	}
	rec.Acquired, rec.Token = end, token
	if t := Now(); held.Err() == nil {
		rec.LastLive = t
	}
	w.log.Write(&rec) // the acq record: survives a SIGKILL during the hold
	w.holding.Add(1)
	defer w.holding.Add(-1)

	// Work: act only right after a check that found the held context live.
	holdFor := cfg.HoldMin + time.Duration(rng.Int64N(int64(cfg.HoldMax-cfg.HoldMin)+1))
	if rng.Float64() < cfg.LongHolds {
		lo, hi := cfg.Watchdog/2, 3*max(cfg.Watchdog, cfg.Lease)/2
		holdFor = lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	until := rec.Acquired + int64(holdFor)
	for rec.LastLive != 0 {
		t := Now()
		if held.Err() != nil {
			rec.Cancelled = Now()
			break
		}
		rec.LastLive = t
		if t >= until || ctx.Err() != nil {
			break
		}
		tm.Reset(min(cfg.CheckEvery, time.Duration(until-t)))
		select {
		case <-held.Done():
			tm.Stop()
		case <-ctx.Done():
			tm.Stop()
		case <-tm.C:
		}
	}
	if rec.LastLive != 0 && rec.Cancelled == 0 {
		if t := Now(); held.Err() == nil {
			rec.LastLive = t
		} else {
			rec.Cancelled = Now()
		}
	}
	if rec.Cancelled != 0 || rec.LastLive == 0 {
		rec.Outcome = OutLost
		if cause := context.Cause(held); cause != nil {
			rec.Cause = cause.Error()
		}
	}
	var uerr error
	if rec.Outcome != OutLost || rng.Float64() < cfg.UnlockLost {
		rec.Released = Now()
		rel := rec
		rel.Kind = KindReleasing
		w.log.Write(&rel) // survives a SIGKILL during the release: the belief ended before it
		uerr = w.unlock(lock, plain, held)
	}
	rec.Kind, rec.End = KindHold, Now()
	if rec.Outcome == "" {
		rec.Outcome = OutReleased
		if uerr != nil {
			rec.Outcome = OutUnlockError
		}
	}
	if uerr != nil {
		rec.Err = uerr.Error()
	}
	w.log.Write(&rec)
}

// acquire runs one acquire of the given form and returns the held context and the token (0 for the plain lock).
func (w *worker) acquire(ctx context.Context, lock string, f form, plain bool, bound time.Duration) (context.Context, int64, error) {
	cfg := &w.cfg
	// The forms with their own wait deadline get a context that outlives it, so that rlock's deadline is the one
	// tested; the others are bounded by their context.
	ctxBound := bound
	if f == formTryWD || f == formTryLease || f == formAsync {
		ctxBound = bound + 2*time.Second
	}
	octx, cancel := context.WithTimeout(ctx, ctxBound)
	defer cancel()
	if plain {
		l := w.c.Lock(lock)
		var held context.Context
		var err error
		switch f {
		case formLock:
			held, err = l.Lock(octx)
		case formTryWD:
			held, err = l.TryLock(octx, bound, 0)
		case formTryLease:
			held, err = l.TryLock(octx, bound, cfg.Lease)
		case formLockLease:
			held, err = l.LockLease(octx, cfg.Lease)
		case formAsync:
			held, err = l.TryLockAsync(octx, bound, 0).Get(octx)
		default:
			held, err = l.TryLock(octx, 0, 0)
		}
		return held, 0, err
	}
	l := w.c.FencedLock(lock)
	switch f {
	case formLock:
		return l.Lock(octx)
	case formTryWD:
		return l.TryLock(octx, bound, 0)
	case formTryLease:
		return l.TryLock(octx, bound, cfg.Lease)
	case formLockLease:
		return l.LockLease(octx, cfg.Lease)
	case formAsync:
		fe, err := l.TryLockAsync(octx, bound, 0).Get(octx)
		return fe.Held, fe.Token, err
	default:
		return l.TryLock(octx, 0, 0)
	}
}

func (w *worker) unlock(lock string, plain bool, held context.Context) error {
	if plain {
		return w.c.Lock(lock).Unlock(held)
	}
	return w.c.FencedLock(lock).Unlock(held)
}

// waitOutcome classifies an acquire that did not get the lock. A response timeout also matches
// context.DeadlineExceeded: it is a transport error, not the end of the wait.
func waitOutcome(err error) string {
	switch {
	case errors.Is(err, rlock.ErrNotAcquired):
		return OutNotAcquired
	case errors.Is(err, conn.ErrTimeout) || errors.Is(err, conn.ErrConnLost) || errors.Is(err, conn.ErrUnavailable):
		return OutError
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return OutCtx
	}
	return OutError
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, tm *time.Timer, d time.Duration) {
	tm.Reset(d)
	select {
	case <-tm.C:
	case <-ctx.Done():
		tm.Stop()
	}
}

// monitor writes a hung record for every acquire still pending past its bound plus the tolerance (once per
// acquire), so that a waiter that never returns is in the log even if the process must then be killed.
func (w *worker) monitor(stop <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	statTick := time.NewTicker(w.cfg.StatEvery)
	defer statTick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-statTick.C:
			w.stat()
		case <-tick.C:
			now := Now()
			for g := range w.slots {
				s := &w.slots[g]
				ws := s.waitStart.Load()
				if ws == 0 || now-ws <= s.bound.Load()+int64(w.cfg.Tolerance) || s.reported.Load() {
					continue
				}
				s.reported.Store(true)
				lock, _ := s.lock.Load().(string)
				w.log.Write(&Record{Kind: KindHung, Lock: lock, Proc: w.cfg.Proc, G: g, Seq: s.seq.Load(),
					WaitStart: ws, WaitBound: s.bound.Load(), End: now, Outcome: OutPending})
			}
		}
	}
}

// stat writes a stat record: goroutines, live heap after a GC, locks held, operations, the worst scheduling
// stall since the last record.
func (w *worker) stat() {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.log.Write(&Record{Kind: KindStat, Proc: w.cfg.Proc, At: Now(), Goroutines: runtime.NumGoroutine(),
		HeapAlloc: ms.HeapAlloc, Holding: int(w.holding.Load()), Ops: w.ops.Load(), SchedMax: w.sched.Swap(0)})
}

// probe measures scheduling stalls: how much later than asked a 5 ms sleep returns. It justifies the wait
// tolerance with figures from the run itself.
func (w *worker) probe(stop <-chan struct{}) {
	const step = 5 * time.Millisecond
	tm := time.NewTimer(step)
	defer tm.Stop()
	for {
		t0 := Now()
		select {
		case <-stop:
			return
		case <-tm.C:
		}
		over := Now() - t0 - int64(step)
		for old := w.sched.Load(); over > old && !w.sched.CompareAndSwap(old, over); old = w.sched.Load() {
		}
		tm.Reset(step)
	}
}

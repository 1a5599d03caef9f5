package timer

import (
	"cmp"
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The churn torture test: many goroutines schedule timeouts with random delays and cancel random subsets at random
// moments (before the worker saw them, while they sit in a bucket, at their deadline, and from other tasks on the
// worker), then every timeout is accounted for. Scale it with LOCKSMITH_TIMER_TORTURE=<timeouts> (default 2,000,000;
// 200,000 with -short). The Stop torture stops 40 timers (10 with -short; LOCKSMITH_TIMER_STOP_ITERATIONS=<n>)
// while six goroutines keep adding and cancelling.

// churnRound is one batch of timeouts scheduled by one goroutine; done closes when each has run or been cancelled.
type churnRound struct {
	base    time.Time // the test's time origin
	size    int64
	settled atomic.Int64
	done    chan struct{}
	stats   *churnStats
}

func (rd *churnRound) settle() {
	rd.stats.settled.Add(1)
	if rd.settled.Add(1) == rd.size {
		close(rd.done)
	}
}

type churnStats struct {
	settled  atomic.Int64 // runs + successful cancels, all rounds: the stall detector's progress counter
	early    atomic.Int64 // tasks that ran before their delay had elapsed
	errs     atomic.Int64 // NewTimeout errors
	cancelOK atomic.Int64
}

// churnRec is one timeout of the test and its own task (the lock-entry pattern: no closure per timeout).
type churnRec struct {
	round   *churnRound
	created int64 // nanoseconds since round.base, read before NewTimeout
	delay   int64
	runs    atomic.Int32
	cancels atomic.Int32 // Cancel calls that returned true
}

func (r *churnRec) Run(*Timeout) {
	if int64(time.Since(r.round.base))-r.created < r.delay {
		r.round.stats.early.Add(1)
	}
	r.runs.Add(1)
	r.round.settle()
}

// cancel cancels to and records a success.
func (r *churnRec) cancel(to *Timeout) {
	if to.Cancel() {
		r.cancels.Add(1)
		r.round.stats.cancelOK.Add(1)
		r.round.settle()
	}
}

func TestTortureChurn(t *testing.T) {
	total := 2_000_000
	if testing.Short() {
		total = 200_000
	}
	total = envInt("LOCKSMITH_TIMER_TORTURE", total)
	const (
		goroutines = 8
		batch      = 4000
		window     = 3 // rounds in flight per goroutine
	)
	rounds := max(1, total/(goroutines*batch))

	tm := New(Config{Tick: time.Millisecond, WheelSize: 64}) // 64 ms rotation: the longer delays take rounds
	stats := &churnStats{}
	base := time.Now()
	all := make([][]churnRec, goroutines*rounds)
	finished := make(chan struct{})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() { // owned by this test; exits after its rounds have settled; awaited through finished
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
			var inFlight []*churnRound
			for k := range rounds {
				rd := &churnRound{base: base, size: batch, done: make(chan struct{}), stats: stats}
				recs := make([]churnRec, batch)
				all[g*rounds+k] = recs
				churnRoundRun(tm, rd, recs, rng)
				inFlight = append(inFlight, rd)
				if len(inFlight) == window {
					<-inFlight[0].done // a lost timeout stalls here; the test goroutine's detector reports it
					inFlight = inFlight[1:]
				}
			}
			for _, rd := range inFlight {
				<-rd.done
			}
		}()
	}
	go func() { wg.Wait(); close(finished) }() // owned by this test; exits when the schedulers have
	awaitProgress(t, "churn torture", finished, stats.settled.Load, 15*time.Second)

	unrun := stopTimer(t, tm)
	if len(unrun) != 0 {
		t.Errorf("Stop returned %d timeouts after every timeout had settled", len(unrun))
	}
	var ranAfterCancel, lost, twice, cancelledTwice, scheduled int64
	for _, recs := range all {
		for i := range recs {
			r := &recs[i]
			scheduled++
			runs, cancels := r.runs.Load(), r.cancels.Load()
			switch {
			case runs > 1:
				twice++
			case runs == 1 && cancels > 0:
				ranAfterCancel++
			case runs == 0 && cancels == 0:
				lost++
			}
			if cancels > 1 {
				cancelledTwice++
			}
		}
	}
	t.Logf("churn: %d timeouts by %d goroutines in %v; %d cancelled; ran after a successful Cancel %d, lost %d, "+
		"ran twice %d, ran early %d, cancelled twice %d, NewTimeout errors %d",
		scheduled, goroutines, time.Since(base).Round(time.Millisecond), stats.cancelOK.Load(),
		ranAfterCancel, lost, twice, stats.early.Load(), cancelledTwice, stats.errs.Load())
	if ranAfterCancel+lost+twice+stats.early.Load()+cancelledTwice+stats.errs.Load() != 0 {
		t.Fatal("churn torture found violations (see the counts above)")
	}
	if n := tm.Pending(); n != 0 {
		t.Fatalf("Pending = %d after everything settled", n)
	}
}

// churnRoundRun schedules one round and cancels a random ~half of it at random moments.
func churnRoundRun(tm *Timer, rd *churnRound, recs []churnRec, rng *rand.Rand) {
	tos := make([]*Timeout, len(recs))
	var batchCancel, lateCancel []int
	for i := range recs {
		r := &recs[i]
		r.round = rd
		var d time.Duration
		switch x := rng.IntN(10); {
		case x < 4: // around the current tick: races expiry with transfer and Cancel
			d = time.Duration(rng.Int64N(int64(3*time.Millisecond))) - time.Millisecond
		case x < 8:
			d = time.Duration(rng.Int64N(int64(30 * time.Millisecond)))
		default: // several rotations
			d = time.Duration(rng.Int64N(int64(300 * time.Millisecond)))
		}
		r.delay = int64(max(d, 0))
		r.created = int64(time.Since(rd.base))
		var task Task = r
		if rng.IntN(20) == 0 && i > 0 {
			// A task that also cancels the previous timeout, from the worker.
			victim, victimTo := &recs[i-1], tos[i-1]
			task = TaskFunc(func(to *Timeout) {
				r.Run(to)
				if victimTo != nil {
					victim.cancel(victimTo)
				}
			})
		}
		to, err := tm.NewTimeout(task, d)
		if err != nil {
			rd.stats.errs.Add(1)
			r.runs.Store(-1) // not a lost timeout: it was never accepted
			rd.settle()
			continue
		}
		tos[i] = to
		switch x := rng.IntN(100); {
		case x < 15:
			r.cancel(to) // usually before the worker has seen it
		case x < 35:
			batchCancel = append(batchCancel, i)
		case x < 50:
			lateCancel = append(lateCancel, i)
		}
		if i%64 == 0 {
			runtime.Gosched()
		}
	}
	for _, i := range batchCancel {
		recs[i].cancel(tos[i])
	}
	// Cancel the rest close to their deadlines, where Cancel races with expiry.
	slices.SortFunc(lateCancel, func(a, b int) int {
		return cmp.Compare(recs[a].created+recs[a].delay, recs[b].created+recs[b].delay)
	})
	for _, i := range lateCancel {
		r := &recs[i]
		at := r.created + r.delay - rng.Int64N(int64(time.Millisecond)) + int64(300*time.Microsecond)
		if wait := time.Duration(at - int64(time.Since(rd.base))); wait > 0 {
			time.Sleep(wait) // load shaping: aim the Cancel at the deadline, not synchronisation
		}
		r.cancel(tos[i])
	}
}

// stopRec is one timeout of the Stop torture test.
type stopRec struct {
	runs    atomic.Int32
	cancels atomic.Int32
	unrun   int32 // set by the test goroutine after Stop returned
}

func (r *stopRec) Run(*Timeout) { r.runs.Add(1) }

func TestTortureStopWhileOthersAdd(t *testing.T) {
	iterations := 40
	if testing.Short() {
		iterations = 10
	}
	iterations = envInt("LOCKSMITH_TIMER_STOP_ITERATIONS", iterations)
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	var accepted, returned int
	for it := range iterations {
		a, r := stopWhileAdding(t, it, 500+rng.IntN(5000))
		accepted, returned = accepted+a, returned+r
	}
	t.Logf("stop torture: %d timers stopped under %d adders each; %d timeouts accepted, %d returned by Stop, "+
		"every one ran, was cancelled or was returned exactly once; no add accepted after Stop returned",
		iterations, 6, accepted, returned)
}

// stopWhileAdding runs one Timer under adders, stops it after stopAfter additions, checks every accepted timeout,
// and returns how many were accepted and how many Stop returned.
func stopWhileAdding(t *testing.T, it, stopAfter int) (accepted, returned int) {
	const adders = 6
	tm := New(Config{Tick: time.Millisecond, WheelSize: 64})
	var (
		added        atomic.Int64
		stopReturned atomic.Bool
		lateAccepted atomic.Int64
		otherErrs    atomic.Int64
		reached      = make(chan struct{})
		reachedOnce  sync.Once
		recs         = make([][]*stopRec, adders)
		wg           sync.WaitGroup
	)
	for a := range adders {
		wg.Add(1)
		go func() { // owned by this test; exits on its first ErrStopped; awaited below
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(a), uint64(it)))
			for {
				r := &stopRec{}
				after := stopReturned.Load()
				to, err := tm.NewTimeout(r, time.Duration(rng.Int64N(int64(5*time.Millisecond))))
				if errors.Is(err, ErrStopped) {
					return
				}
				if err != nil {
					otherErrs.Add(1)
					continue
				}
				if after {
					lateAccepted.Add(1)
				}
				recs[a] = append(recs[a], r)
				if rng.IntN(3) == 0 && to.Cancel() {
					r.cancels.Add(1)
				}
				if added.Add(1) == int64(stopAfter) {
					reachedOnce.Do(func() { close(reached) })
				}
			}
		}()
	}
	awaitProgress(t, "adders", reached, added.Load, 15*time.Second)
	unrun := stopTimer(t, tm)
	stopReturned.Store(true)
	for _, to := range unrun {
		to.Task().(*stopRec).unrun++
	}
	exited := make(chan struct{})
	go func() { wg.Wait(); close(exited) }() // owned by this test; exits when the adders have
	awaitClosed(t, "adders after Stop", exited, 20*time.Second)

	var n, bad int
	for _, rs := range recs {
		for _, r := range rs {
			n++
			runs, cancels := r.runs.Load(), r.cancels.Load()
			ok := runs <= 1 && cancels <= 1 && r.unrun <= 1
			switch {
			case runs == 1:
				ok = ok && cancels == 0 && r.unrun == 0
			case r.unrun == 1: // Cancel after Stop may also report true: it never runs either way
			default:
				ok = ok && cancels == 1
			}
			if !ok {
				bad++
			}
		}
	}
	if bad != 0 || lateAccepted.Load() != 0 || otherErrs.Load() != 0 || tm.Pending() != 0 {
		t.Fatalf("iteration %d: %d accepted timeouts, %d neither ran, nor were cancelled, nor were returned by Stop "+
			"exactly once; %d accepted after Stop returned; %d other errors; Pending %d",
			it, n, bad, lateAccepted.Load(), otherErrs.Load(), tm.Pending())
	}
	return n, len(unrun)
}

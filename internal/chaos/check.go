package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Options tune the checker. The zero value takes the defaults documented on each field.
type Options struct {
	// WaitTolerance is how much longer than its wait bound an acquire may take before it counts as a late
	// waiter. Default DefaultWaitTolerance.
	WaitTolerance time.Duration
	// UnsafeRestartBound is how long after an unsafe restart (FaultRestartNoPersist: the server came back empty
	// at once) a watchdog holder from before it may go on believing it holds the lock. Default: none given means
	// 2 × the longest lease seen in the log (see the package documentation for the derivation).
	UnsafeRestartBound time.Duration
	// ReplyLag is how long after the server answered again a reply of the old server may still be read by a
	// client (it was in flight when the server was killed). Default DefaultReplyLag.
	ReplyLag time.Duration
}

// Defaults of Options.
const (
	// DefaultWaitTolerance: an acquire's wait deadline is a timeout on the client's timing wheel, which fires up
	// to one tick (10 ms) late and fails the caller's future at once, without waiting for a command in flight.
	// What remains is scheduling: the timer's goroutine and the caller's goroutine must both run. On the shared
	// 2-core machine, with a dozen race-instrumented processes and redis-server competing, the worker's own
	// scheduling probe (Report.SchedMax) sees stalls of a few hundred milliseconds; 1 s leaves room for that
	// without hiding a waiter that is stuck (those never end: they stay pending for seconds).
	DefaultWaitTolerance = time.Second
	// DefaultReplyLag: how long a client may take to read a reply that was already on its socket.
	DefaultReplyLag = 250 * time.Millisecond
)

// ProcInfo describes one worker process, as the orchestrator saw it.
type ProcInfo struct {
	Index   int   `json:"index"`
	PID     int   `json:"pid"`
	Started int64 `json:"started"`
	Exited  int64 `json:"exited"`           // when its exit was reaped (0: unknown)
	Killed  bool  `json:"killed,omitempty"` // SIGKILLed by a fault (FaultKillHolder)
	// KilledAt is when the fault's kill(2) returned (0: not killed by a fault). The process acts no more after
	// it, give or take the microseconds the kernel takes to deliver SIGKILL (KillDeliveryMargin); reaping can come
	// many milliseconds later under load, so Exited is a loose bound on its last act.
	KilledAt int64  `json:"killedAt,omitempty"`
	Forced   bool   `json:"forced,omitempty"`  // SIGKILLed because it did not exit in time after SIGTERM: hung
	ExitErr  string `json:"exitErr,omitempty"` // its wait status when not 0
}

// KillDeliveryMargin is how long after kill(2) returned a SIGKILLed process is still taken to be able to act: the
// kernel delivers the signal at the target's next entry into the kernel or interrupt, within microseconds.
const KillDeliveryMargin = time.Millisecond

// Input is everything the checker looks at: the records of every worker, the faults, and the processes.
type Input struct {
	Records []Record
	Faults  []Fault
	Procs   []ProcInfo
}

// Violation is one broken promise found in the log.
type Violation struct {
	Kind   string // "overlap", "token-order", "token-duplicate", "late-waiter", "hung-waiter", "worker", "log"
	Lock   string
	Detail string
}

func (v Violation) String() string {
	if v.Lock == "" {
		return v.Kind + ": " + v.Detail
	}
	return v.Kind + " on " + v.Lock + ": " + v.Detail
}

// Recovery is how long the lock service took to come back after one fault: from the fault's end (its start for
// SIGKILL and partition, whose point is the takeover) until every lock concerned was acquired again.
type Recovery struct {
	Fault FaultKind
	At    int64         // the fault's start
	Took  time.Duration // -1 when some lock concerned was never acquired again before the run ended
	Locks int           // locks concerned
}

// Report is the checker's verdict and the run's figures.
type Report struct {
	Processes   int
	Holds       int // acquisitions (hold and orphan acq records)
	Believed    int // holds whose holder believed it held the lock (checked for overlap and token order)
	NeverHeld   int // granted, but the held context was already cancelled at the first check
	Lost        int // holds that ended with the held context cancelled before release
	Waits       int // acquires that ended without the lock
	Faults      int
	FaultCounts map[FaultKind]int

	Violations []Violation // the run fails when this is not empty
	// HungWaiters counts acquires that were still pending past their bound (monitor records, or processes that
	// had to be killed at the end); LateWaiters those that ended, but later than bound + tolerance. Both are
	// also listed in Violations.
	HungWaiters, LateWaiters int
	// MaxWaitOver is the largest amount by which an acquire overran its wait bound (0 when none did).
	MaxWaitOver time.Duration

	// UnsafeOverlaps are overlaps explained by a FaultRestartNoPersist: a holder from before the unsafe restart
	// went on believing (within the bound) while a holder from after it held the lock. Not violations.
	UnsafeOverlaps  int
	MaxUnsafeBelief time.Duration // longest belief of an old holder after the unsafe restart's end
	TokenResets     int           // token decreases across a restart that forgot the data (expected)

	// ObservedOverlaps counts overlaps of the observed belief intervals (until the worker noticed the
	// cancellation or called Unlock) that are not overlaps of the proven ones: they measure how late workers
	// noticed, not the lock. MaxObservedOverlap is the largest.
	ObservedOverlaps   int
	MaxObservedOverlap time.Duration

	Recoveries []Recovery
	SchedMax   time.Duration // the largest scheduling stall a worker's probe saw (from stat records)
}

// OK reports whether the run kept every promise.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

// String summarises the report in a few lines, listing at most 20 violations.
func (r *Report) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "processes %d, acquisitions %d (believed %d, never held %d, lost %d), failed waits %d, faults %d %v\n",
		r.Processes, r.Holds, r.Believed, r.NeverHeld, r.Lost, r.Waits, r.Faults, r.FaultCounts)
	fmt.Fprintf(&sb, "violations %d, hung waiters %d, late waiters %d, max wait overrun %v, sched max %v\n",
		len(r.Violations), r.HungWaiters, r.LateWaiters, r.MaxWaitOver, r.SchedMax)
	fmt.Fprintf(&sb, "unsafe-restart overlaps %d (max old belief %v), token resets %d, observed-only overlaps %d (max %v)\n",
		r.UnsafeOverlaps, r.MaxUnsafeBelief, r.TokenResets, r.ObservedOverlaps, r.MaxObservedOverlap)
	if len(r.Recoveries) > 0 {
		sb.WriteString("recovery:")
		for _, k := range AllFaultKinds {
			var ds []time.Duration
			never := 0
			for _, rc := range r.Recoveries {
				if rc.Fault == k {
					if rc.Took < 0 {
						never++
					} else {
						ds = append(ds, rc.Took)
					}
				}
			}
			if len(ds) == 0 && never == 0 {
				continue
			}
			slices.Sort(ds)
			fmt.Fprintf(&sb, " %s n=%d", k, len(ds)+never)
			if len(ds) > 0 {
				fmt.Fprintf(&sb, " max=%v", ds[len(ds)-1].Round(time.Millisecond))
			}
			if never > 0 {
				fmt.Fprintf(&sb, " never=%d", never)
			}
			sb.WriteString(";")
		}
		sb.WriteString("\n")
	}
	for i, v := range r.Violations {
		if i == 20 {
			fmt.Fprintf(&sb, "... and %d more\n", len(r.Violations)-20)
			break
		}
		sb.WriteString("  " + v.String() + "\n")
	}
	return sb.String()
}

// hold is one acquisition as the checker sees it.
type hold struct {
	lock     string
	proc, g  int
	seq      int64
	token    int64
	lease    time.Duration
	waitFrom int64 // when the acquire call started: a grant read later cannot come from a server killed before
	acquired int64
	// end is the end of the proven belief (LastLive), or the process's death for a hold whose process died
	// before writing its hold record; 0 = never believed.
	end      int64
	observed int64 // end of the observed belief: cancellation noticed, or Unlock called (>= end)
	orphan   bool  // no hold record: the process died holding or releasing (outcome says which)
	outcome  string
}

func (h *hold) String() string {
	s := fmt.Sprintf("proc %d g %d op %d token %d [%d, %d]", h.proc, h.g, h.seq, h.token, h.acquired, h.end)
	if h.orphan {
		s += " (process " + h.outcome + ")"
	}
	return s
}

// Check verifies the log of a run against the promises of the lock (see the package documentation):
//   - no two holders of a lock overlapped while both believed they held it;
//   - fencing tokens grew strictly in grant order (except across a restart that forgot the data);
//   - every acquire ended within its wait bound plus the tolerance;
//   - every worker exited cleanly unless a fault killed it.
//
// It does no I/O and is safe for concurrent use on distinct inputs.
func Check(in Input, opt Options) *Report {
	if opt.WaitTolerance == 0 {
		opt.WaitTolerance = DefaultWaitTolerance
	}
	if opt.ReplyLag == 0 {
		opt.ReplyLag = DefaultReplyLag
	}
	r := &Report{Processes: len(in.Procs), Faults: len(in.Faults), FaultCounts: map[FaultKind]int{}}
	for _, f := range in.Faults {
		r.FaultCounts[f.Kind]++
	}
	faults := slices.Clone(in.Faults)
	slices.SortFunc(faults, func(a, b Fault) int { return cmp.Compare(a.Start, b.Start) })

	holds := collectHolds(in, r)
	if opt.UnsafeRestartBound == 0 {
		var maxLease time.Duration
		for _, h := range holds {
			maxLease = max(maxLease, h.lease)
		}
		opt.UnsafeRestartBound = 2 * maxLease
	}
	byLock := map[string][]*hold{}
	for _, h := range holds {
		byLock[h.lock] = append(byLock[h.lock], h)
	}
	locks := make([]string, 0, len(byLock))
	for l := range byLock {
		locks = append(locks, l)
	}
	slices.Sort(locks)
	for _, l := range locks {
		hs := byLock[l]
		slices.SortFunc(hs, func(a, b *hold) int { return cmp.Compare(a.acquired, b.acquired) })
		checkOverlaps(l, hs, faults, opt, r)
		checkTokens(l, hs, faults, opt, r)
	}
	checkWaits(in.Records, opt, r)
	r.Recoveries = recoveries(byLock, faults)
	return r
}

// collectHolds builds the holds from hold records and from acq (and rel) records left by processes that died, and
// checks that every process either exited cleanly or was killed by a fault.
func collectHolds(in Input, r *Report) []*hold {
	type opKey struct {
		proc, g int
		seq     int64
	}
	finished := map[opKey]bool{}
	releasing := map[opKey]*Record{}
	exited := map[int]bool{}
	for i := range in.Records {
		rec := &in.Records[i]
		switch rec.Kind {
		case KindHold:
			finished[opKey{rec.Proc, rec.G, rec.Seq}] = true
		case KindReleasing:
			releasing[opKey{rec.Proc, rec.G, rec.Seq}] = rec
		case KindExit:
			exited[rec.Proc] = true
		}
	}
	procs := map[int]ProcInfo{}
	for _, p := range in.Procs {
		procs[p.Index] = p
		switch {
		case p.Forced:
			r.Violations = append(r.Violations, Violation{Kind: "worker", Detail: fmt.Sprintf(
				"worker %d (pid %d) did not exit after SIGTERM and was killed: something in it hung", p.Index, p.PID)})
		case !p.Killed && !exited[p.Index]:
			r.Violations = append(r.Violations, Violation{Kind: "worker", Detail: fmt.Sprintf(
				"worker %d (pid %d) ended without its exit record (%s)", p.Index, p.PID, p.ExitErr)})
		}
	}
	var holds []*hold
	for i := range in.Records {
		rec := &in.Records[i]
		switch rec.Kind {
		case KindHold:
			h := &hold{lock: rec.Lock, proc: rec.Proc, g: rec.G, seq: rec.Seq, token: rec.Token,
				lease: time.Duration(rec.Lease), waitFrom: rec.WaitStart, acquired: rec.Acquired, end: rec.LastLive,
				outcome: rec.Outcome}
			h.observed = observedEnd(rec)
			r.Holds++
			if rec.Outcome == OutLost {
				r.Lost++
			}
			if h.end == 0 {
				r.NeverHeld++
			} else {
				r.Believed++
			}
			holds = append(holds, h)
		case KindAcquired:
			if finished[opKey{rec.Proc, rec.G, rec.Seq}] {
				continue
			}
			p, ok := procs[rec.Proc]
			if exited[rec.Proc] || !ok || p.Exited == 0 {
				r.Violations = append(r.Violations, Violation{Kind: "log", Lock: rec.Lock, Detail: fmt.Sprintf(
					"worker %d g %d op %d: acquired at %d but no hold record, and the process did not die holding",
					rec.Proc, rec.G, rec.Seq, rec.Acquired)})
				continue
			}
			h := &hold{lock: rec.Lock, proc: rec.Proc, g: rec.G, seq: rec.Seq, token: rec.Token,
				lease: time.Duration(rec.Lease), waitFrom: rec.WaitStart, acquired: rec.Acquired, orphan: true}
			if rel := releasing[opKey{rec.Proc, rec.G, rec.Seq}]; rel != nil {
				// The process died while releasing: its belief ended at the check before Unlock.
				h.end, h.observed, h.outcome = rel.LastLive, observedEnd(rel), "died releasing"
			} else {
				// The process died holding: it may have acted until it died.
				died := p.Exited
				if p.KilledAt != 0 {
					died = min(died, p.KilledAt+int64(KillDeliveryMargin))
				}
				h.end, h.observed, h.outcome = died, died, "died"
			}
			r.Holds++
			if h.end == 0 {
				r.NeverHeld++
			} else {
				r.Believed++
			}
			holds = append(holds, h)
		}
	}
	return holds
}

// observedEnd is when the worker stopped believing as it observed it: when it noticed the cancellation, or when
// it called Unlock, whichever came first.
func observedEnd(rec *Record) int64 {
	if rec.LastLive == 0 {
		return 0
	}
	end := rec.End
	if rec.Released != 0 {
		end = rec.Released
	}
	if rec.Cancelled != 0 && (end == 0 || rec.Cancelled < end) {
		end = rec.Cancelled
	}
	return max(end, rec.LastLive)
}

package chaos

import (
	"fmt"
	"time"
)

// checkOverlaps finds pairs of holds of one lock (sorted by acquisition) whose proven belief intervals intersect.
// An overlap is a violation unless an unsafe restart explains it: the earlier holder got the lock from the server
// that was killed (acquired before that server's successor answered, plus the reply lag), the later one from its
// successor (acquired after the kill), and the earlier one stopped believing within its bound (its own lease for a
// lease lock; UnsafeRestartBound after the restart for a watchdog lock).
func checkOverlaps(lock string, hs []*hold, faults []Fault, opt Options, r *Report) {
	var active, observed []*hold
	for _, h := range hs {
		if h.end == 0 {
			continue
		}
		// Proven intervals.
		keep := active[:0]
		for _, a := range active {
			if a.end >= h.acquired {
				keep = append(keep, a)
			}
		}
		active = keep
		for _, a := range active {
			if f, ok := unsafeRestartBetween(a, h, faults, opt); ok {
				belief := time.Duration(a.end - f.End)
				limit := opt.UnsafeRestartBound
				if a.lease > 0 {
					limit = time.Duration(a.acquired + int64(a.lease) - f.End)
				}
				if belief <= limit {
					r.UnsafeOverlaps++
					r.MaxUnsafeBelief = max(r.MaxUnsafeBelief, belief)
					continue
				}
				r.Violations = append(r.Violations, Violation{Kind: "overlap", Lock: lock, Detail: fmt.Sprintf(
					"%v believed %v after the unsafe restart ended (limit %v) while %v held the lock",
					a, belief.Round(time.Millisecond), limit.Round(time.Millisecond), h)})
				continue
			}
			r.Violations = append(r.Violations, Violation{Kind: "overlap", Lock: lock, Detail: fmt.Sprintf(
				"%v and %v both believed they held it for %v", a, h, time.Duration(a.end-h.acquired))})
		}
		active = append(active, h)

		// Observed intervals: overlaps that the proven intervals do not show measure how late workers noticed.
		keepObs := observed[:0]
		for _, a := range observed {
			if a.observed >= h.acquired {
				keepObs = append(keepObs, a)
			}
		}
		observed = keepObs
		for _, a := range observed {
			if a.end < h.acquired {
				if _, ok := unsafeRestartBetween(a, h, faults, opt); !ok {
					r.ObservedOverlaps++
					r.MaxObservedOverlap = max(r.MaxObservedOverlap, time.Duration(a.observed-h.acquired))
				}
			}
		}
		observed = append(observed, h)
	}
}

// unsafeRestartBetween returns the FaultRestartNoPersist that separates a (granted by the server that was
// killed) from b (granted by its successor), if any. a may come from the killed server when its acquire started
// before the kill and returned before the successor answered (plus the reply lag); b comes from the successor
// when it returned after the kill.
func unsafeRestartBetween(a, b *hold, faults []Fault, opt Options) (Fault, bool) {
	for _, f := range faults {
		if f.Kind == FaultRestartNoPersist && fromOldServer(a, f, opt) && b.acquired >= f.Start {
			return f, true
		}
	}
	return Fault{}, false
}

// fromOldServer reports whether a may have been granted by the server that f killed.
func fromOldServer(a *hold, f Fault, opt Options) bool {
	return a.waitFrom < f.Start && a.acquired < f.End+int64(opt.ReplyLag)
}

// dataLossBetween reports whether a restart that forgot the data separates a's grant from b's.
func dataLossBetween(a, b *hold, faults []Fault, opt Options) bool {
	for _, f := range faults {
		if f.forgetsData() && fromOldServer(a, f, opt) && b.acquired >= f.Start {
			return true
		}
	}
	return false
}

// checkTokens checks the fencing tokens of one lock's holds (sorted by acquisition). Among believed holds,
// acquisition order is grant order (their proven intervals do not overlap, or an overlap was reported), so each
// token must be larger than the one before, unless a restart that forgot the token key lies between them. No two
// grants may share a token either, believed or not. Holds without a token (0) are skipped.
func checkTokens(lock string, hs []*hold, faults []Fault, opt Options, r *Report) {
	var prev *hold
	seen := map[int64]*hold{}
	for _, h := range hs {
		if h.token == 0 {
			continue
		}
		if o := seen[h.token]; o != nil && !dataLossBetween(o, h, faults, opt) {
			r.Violations = append(r.Violations, Violation{Kind: "token-duplicate", Lock: lock, Detail: fmt.Sprintf(
				"%v and %v were granted the same token", o, h)})
		}
		seen[h.token] = h
		if h.end == 0 {
			continue
		}
		if prev != nil && h.token <= prev.token {
			if dataLossBetween(prev, h, faults, opt) {
				r.TokenResets++
			} else {
				r.Violations = append(r.Violations, Violation{Kind: "token-order", Lock: lock, Detail: fmt.Sprintf(
					"%v was granted after %v with a token that is not larger", h, prev)})
			}
		}
		prev = h
	}
}

// checkWaits checks that every acquire ended within its wait bound plus the tolerance. Every acquire that got the
// lock has an acq record; one that did not has a wait record; one still pending past its bound has a hung record
// from the worker's monitor (and, if it ended later, also a completion record: it then counts as late, not hung).
func checkWaits(recs []Record, opt Options, r *Report) {
	type opKey struct {
		proc, g int
		seq     int64
	}
	done := map[opKey]bool{}
	for i := range recs {
		rec := &recs[i]
		var end int64
		switch rec.Kind {
		case KindAcquired:
			end = rec.Acquired
		case KindWait:
			end = rec.End
			r.Waits++
		case KindStat:
			r.SchedMax = max(r.SchedMax, time.Duration(rec.SchedMax))
			continue
		default:
			continue
		}
		done[opKey{rec.Proc, rec.G, rec.Seq}] = true
		took := time.Duration(end - rec.WaitStart)
		over := took - time.Duration(rec.WaitBound)
		if over > 0 {
			r.MaxWaitOver = max(r.MaxWaitOver, over)
		}
		if over > opt.WaitTolerance {
			r.LateWaiters++
			r.Violations = append(r.Violations, Violation{Kind: "late-waiter", Lock: rec.Lock, Detail: fmt.Sprintf(
				"worker %d g %d op %d: acquire took %v for a bound of %v (outcome %s %s)", rec.Proc, rec.G, rec.Seq,
				took.Round(time.Millisecond), time.Duration(rec.WaitBound), outcomeOf(rec), rec.Err)})
		}
	}
	for i := range recs {
		rec := &recs[i]
		if rec.Kind != KindHung || done[opKey{rec.Proc, rec.G, rec.Seq}] {
			continue
		}
		r.HungWaiters++
		r.Violations = append(r.Violations, Violation{Kind: "hung-waiter", Lock: rec.Lock, Detail: fmt.Sprintf(
			"worker %d g %d op %d: acquire started at %d with a bound of %v still pending at %d",
			rec.Proc, rec.G, rec.Seq, rec.WaitStart, time.Duration(rec.WaitBound), rec.End)})
	}
}

func outcomeOf(rec *Record) string {
	if rec.Kind == KindAcquired {
		return "acquired"
	}
	return rec.Outcome
}

// recoveries measures, for each fault, how long until the locks it concerned were acquired again:
//   - SIGKILL: the locks the killed workers held at the kill, until another worker acquired each (from the kill);
//   - partition: the locks workers behind the proxy held when it began, until a worker on the other side
//     acquired each (from the partition's start: the takeover is the point);
//   - every other fault: every lock of the run, from the fault's end until each was acquired again.
func recoveries(byLock map[string][]*hold, faults []Fault) []Recovery {
	var out []Recovery
	for _, f := range faults {
		from := f.End
		targeted := f.Kind == FaultKillHolder || f.Kind == FaultPartition
		if targeted {
			from = f.Start
		}
		rc := Recovery{Fault: f.Kind, At: f.Start}
		never := false
		for _, hs := range byLock {
			if targeted && !heldBy(hs, f, f.Start) {
				continue
			}
			rc.Locks++
			first := int64(-1)
			for _, h := range hs {
				if h.end == 0 || h.acquired <= from || (targeted && f.hits(h.proc)) {
					continue
				}
				first = h.acquired
				break
			}
			if first < 0 {
				never = true
				continue
			}
			rc.Took = max(rc.Took, time.Duration(first-from))
		}
		if never {
			rc.Took = -1
		}
		if rc.Locks > 0 {
			out = append(out, rc)
		}
	}
	return out
}

// heldBy reports whether a worker hit by f held one of hs (one lock's holds) at time t.
func heldBy(hs []*hold, f Fault, t int64) bool {
	for _, h := range hs {
		if h.end != 0 && h.acquired <= t && t <= max(h.end, h.observed) && f.hits(h.proc) {
			return true
		}
	}
	return false
}

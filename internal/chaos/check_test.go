package chaos

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

// logBuilder makes hand-written logs: times are in milliseconds from 0.
type logBuilder struct {
	recs  []Record
	procs map[int]bool
	seq   int64
}

func newLog() *logBuilder { return &logBuilder{procs: map[int]bool{}} }

// hold adds a complete hold: waited from ws, acquired at a, believed until ll (0: never), released at rel
// (0: lost, noticed at rel instead... see lost).
func (b *logBuilder) hold(proc int, lock string, token, ws, a, ll, rel int64) *Record {
	b.seq++
	b.procs[proc] = true
	acq := Record{Kind: KindAcquired, Lock: lock, Proc: proc, Seq: b.seq, Token: token, WaitStart: ws * ms,
		WaitBound: 1000 * ms, Acquired: a * ms}
	h := acq
	h.Kind = KindHold
	h.LastLive, h.Released, h.End, h.Outcome = ll*ms, rel*ms, rel*ms, OutReleased
	b.recs = append(b.recs, acq, h)
	return &b.recs[len(b.recs)-1]
}

// lost adds a hold whose context was cancelled: live until ll, cancellation noticed at c.
func (b *logBuilder) lost(proc int, lock string, token, a, ll, c int64) *Record {
	r := b.hold(proc, lock, token, a, a, ll, 0)
	r.Released, r.Cancelled, r.End, r.Outcome, r.Cause = 0, c*ms, c*ms, OutLost, "rlock: lease expired"
	return r
}

// orphan adds only the acq record of a hold: the process died holding.
func (b *logBuilder) orphan(proc int, lock string, token, a int64) {
	b.seq++
	b.procs[proc] = true
	b.recs = append(b.recs, Record{Kind: KindAcquired, Lock: lock, Proc: proc, Seq: b.seq, Token: token,
		WaitStart: a * ms, WaitBound: 1000 * ms, Acquired: a * ms})
}

// orphanReleasing adds the acq and rel records of a hold whose process died while releasing: live until ll,
// Unlock called at rel.
func (b *logBuilder) orphanReleasing(proc int, lock string, token, a, ll, rel int64) {
	b.orphan(proc, lock, token, a)
	r := b.recs[len(b.recs)-1]
	r.Kind, r.LastLive, r.Released = KindReleasing, ll*ms, rel*ms
	b.recs = append(b.recs, r)
}

func (b *logBuilder) wait(proc int, lock string, ws, bound, end int64, outcome string) {
	b.seq++
	b.procs[proc] = true
	b.recs = append(b.recs, Record{Kind: KindWait, Lock: lock, Proc: proc, Seq: b.seq, WaitStart: ws * ms,
		WaitBound: bound * ms, End: end * ms, Outcome: outcome})
}

// reapDelay is how long after its kill a killed process of a built log is reaped.
const reapDelay = 20 * ms

// input closes the log: every process wrote its exit record, except those in killed (SIGKILLed at the given
// time) and those that were forced.
func (b *logBuilder) input(faults []Fault, killed map[int]int64, forced ...int) Input {
	in := Input{Records: b.recs, Faults: faults}
	for p := range b.procs {
		pi := ProcInfo{Index: p, PID: 1000 + p, Exited: 100000 * ms}
		if t, ok := killed[p]; ok {
			pi.Killed, pi.KilledAt, pi.Exited = true, t*ms, t*ms+reapDelay
		} else if contains(forced, p) {
			pi.Forced = true
		} else {
			in.Records = append(in.Records, Record{Kind: KindExit, Proc: p})
		}
		in.Procs = append(in.Procs, pi)
	}
	return in
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func kinds(r *Report) []string {
	var k []string
	for _, v := range r.Violations {
		k = append(k, v.Kind)
	}
	return k
}

func wantViolations(t *testing.T, r *Report, want ...string) {
	t.Helper()
	got := kinds(r)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("violations %v, want %v\n%s", got, want, r)
	}
}

func TestCheckCleanLogPasses(t *testing.T) {
	b := newLog()
	b.hold(1, "a", 1, 0, 10, 20, 21)
	b.hold(2, "a", 2, 5, 25, 40, 40) // waited from 5, acquired after the release of 1
	b.hold(1, "b", 1, 0, 10, 50, 50) // another lock: may overlap with "a"
	b.lost(2, "a", 3, 60, 90, 95)    // lost: believed until 90, noticed at 95
	b.hold(1, "a", 4, 50, 100, 120, 120)
	b.wait(3, "a", 0, 200, 210, OutNotAcquired) // 10 ms over its bound: within the tolerance
	r := Check(b.input(nil, nil), Options{})
	wantViolations(t, r)
	if r.Holds != 5 || r.Believed != 5 || r.Lost != 1 || r.Waits != 1 || r.Processes != 3 {
		t.Fatalf("counts wrong:\n%s", r)
	}
	if r.MaxWaitOver != 10*time.Millisecond {
		t.Fatalf("max wait overrun %v, want 10ms", r.MaxWaitOver)
	}
}

func TestCheckFindsOverlap(t *testing.T) {
	b := newLog()
	b.hold(1, "a", 1, 0, 10, 30, 30)
	b.hold(2, "a", 2, 0, 25, 40, 40) // acquired at 25 while 1 believed until 30
	r := Check(b.input(nil, nil), Options{})
	wantViolations(t, r, "overlap")
	if !strings.Contains(r.Violations[0].Detail, "5ms") {
		t.Fatalf("overlap should be 5ms: %s", r.Violations[0])
	}
}

func TestCheckOverlapAtTheSameInstantCounts(t *testing.T) {
	b := newLog()
	b.hold(1, "a", 1, 0, 10, 30, 30)
	b.hold(2, "a", 2, 0, 30, 40, 40)
	wantViolations(t, Check(b.input(nil, nil), Options{}), "overlap")
}

func TestCheckFindsOverlapWithANestedHolder(t *testing.T) {
	// The second holder is entirely inside the first: a sweep that only compares neighbours' ends still sees it,
	// and a third holder after both overlaps with neither.
	b := newLog()
	b.hold(1, "a", 1, 0, 10, 100, 100)
	b.hold(2, "a", 2, 0, 20, 30, 30)
	b.hold(3, "a", 3, 0, 101, 110, 110)
	wantViolations(t, Check(b.input(nil, nil), Options{}), "overlap")
}

func TestCheckCancelledHolderStopsAtItsLastLiveCheck(t *testing.T) {
	// Holder 1's context was cancelled: it was proven live until 30 and noticed the cancellation at 45. Holder 2
	// acquired at 35: not a violation of the lock (proven belief ended at 30), but an observed-only overlap of
	// 10 ms that the report shows.
	b := newLog()
	b.lost(1, "a", 1, 10, 30, 45)
	b.hold(2, "a", 2, 0, 35, 50, 50)
	r := Check(b.input(nil, nil), Options{})
	wantViolations(t, r)
	if r.ObservedOverlaps != 1 || r.MaxObservedOverlap != 10*time.Millisecond {
		t.Fatalf("observed overlaps %d max %v, want 1 and 10ms", r.ObservedOverlaps, r.MaxObservedOverlap)
	}
	// A holder still proven live at 40 overlaps.
	b = newLog()
	b.lost(1, "a", 1, 10, 40, 45)
	b.hold(2, "a", 2, 0, 35, 50, 50)
	wantViolations(t, Check(b.input(nil, nil), Options{}), "overlap")
}

func TestCheckNeverBelievedHoldIsNotAnOverlap(t *testing.T) {
	// Granted, but its context was already cancelled at the first check (a reply that came after the lease).
	b := newLog()
	b.hold(1, "a", 1, 0, 10, 50, 50)
	r := b.lost(2, "a", 2, 20, 0, 21)
	r.LastLive = 0
	rep := Check(b.input(nil, nil), Options{})
	wantViolations(t, rep)
	if rep.NeverHeld != 1 {
		t.Fatalf("never held %d, want 1", rep.NeverHeld)
	}
}

func TestCheckFindsTokenRegression(t *testing.T) {
	b := newLog()
	b.hold(1, "a", 5, 0, 10, 20, 20)
	b.hold(2, "a", 4, 0, 30, 40, 40) // granted after 5 with a smaller token
	b.hold(1, "a", 6, 0, 50, 60, 60)
	wantViolations(t, Check(b.input(nil, nil), Options{}), "token-order")
}

func TestCheckFindsDuplicateToken(t *testing.T) {
	b := newLog()
	b.hold(1, "a", 5, 0, 10, 20, 20)
	r := b.lost(2, "a", 5, 30, 0, 31) // never believed, but a grant with the same token all the same
	r.LastLive = 0
	wantViolations(t, Check(b.input(nil, nil), Options{}), "token-duplicate")
}

func TestCheckTokensMayRestartAfterDataLoss(t *testing.T) {
	b := newLog()
	b.hold(1, "a", 7, 0, 10, 20, 20)
	b.hold(2, "a", 1, 2950, 3000, 3010, 3010)
	faults := []Fault{{Kind: FaultRestartDelayed, Start: 100 * ms, End: 2900 * ms}}
	r := Check(b.input(faults, nil), Options{})
	wantViolations(t, r)
	if r.TokenResets != 1 {
		t.Fatalf("token resets %d, want 1", r.TokenResets)
	}
	// The same decrease with a persistent restart in between is a violation.
	faults[0].Kind = FaultRestartPersist
	wantViolations(t, Check(b.input(faults, nil), Options{}), "token-order")
}

func TestCheckFindsHungWaiter(t *testing.T) {
	b := newLog()
	b.hold(1, "a", 1, 0, 10, 20, 20)
	b.seq++
	b.recs = append(b.recs, Record{Kind: KindHung, Lock: "a", Proc: 2, Seq: b.seq, WaitStart: 0,
		WaitBound: 1000 * ms, End: 5000 * ms, Outcome: OutPending})
	b.procs[2] = true
	r := Check(b.input(nil, nil, 2), Options{})
	wantViolations(t, r, "worker", "hung-waiter")
	if r.HungWaiters != 1 {
		t.Fatalf("hung %d, want 1", r.HungWaiters)
	}
}

func TestCheckFindsLateWaiter(t *testing.T) {
	b := newLog()
	b.wait(1, "a", 0, 500, 2000, OutNotAcquired) // 1.5 s over a 500 ms bound
	b.hold(2, "a", 1, 0, 3000, 3010, 3010)       // acquired 3 s after starting, bound 1 s
	r := Check(b.input(nil, nil), Options{})
	wantViolations(t, r, "late-waiter", "late-waiter")
	if r.LateWaiters != 2 || r.MaxWaitOver != 2*time.Second {
		t.Fatalf("late %d max %v", r.LateWaiters, r.MaxWaitOver)
	}
	// A hung record followed by the completion counts once, as late.
	b = newLog()
	b.wait(1, "a", 0, 500, 2000, OutNotAcquired)
	b.recs = append(b.recs, Record{Kind: KindHung, Lock: "a", Proc: 1, Seq: b.seq, WaitBound: 500 * ms, End: 1600 * ms})
	r = Check(b.input(nil, nil), Options{})
	wantViolations(t, r, "late-waiter")
	if r.HungWaiters != 0 {
		t.Fatalf("hung %d, want 0", r.HungWaiters)
	}
}

func TestCheckKilledHolderHoldsUntilItDied(t *testing.T) {
	// Worker 1 died at 500 holding "a" (only its acq record). Worker 2 acquiring at 800 is fine; at 300 it
	// overlaps with a holder that may still have been acting.
	b := newLog()
	b.orphan(1, "a", 1, 100)
	b.hold(2, "a", 2, 0, 800, 900, 900)
	kill := []Fault{{Kind: FaultKillHolder, Start: 500 * ms, End: 500 * ms, Procs: []int{1}}}
	r := Check(b.input(kill, map[int]int64{1: 500}), Options{})
	wantViolations(t, r)
	if len(r.Recoveries) != 1 || r.Recoveries[0].Took != 300*time.Millisecond {
		t.Fatalf("recoveries %+v, want one of 300ms", r.Recoveries)
	}

	b = newLog()
	b.orphan(1, "a", 1, 100)
	b.hold(2, "a", 2, 0, 300, 400, 400)
	wantViolations(t, Check(b.input(kill, map[int]int64{1: 500}), Options{}), "overlap")
}

func TestCheckKilledHolderEndsAtTheKillNotAtTheReaping(t *testing.T) {
	// Worker 1 released "a" and was killed at 500 before it could write its hold record; it was reaped at 520.
	// Worker 2 acquiring at 510 did not overlap with anything worker 1 could still do; at 500 it would have.
	b := newLog()
	b.orphan(1, "a", 1, 100)
	b.hold(2, "a", 2, 0, 510, 600, 600)
	kill := []Fault{{Kind: FaultKillHolder, Start: 500 * ms, End: 520 * ms, Procs: []int{1}}}
	wantViolations(t, Check(b.input(kill, map[int]int64{1: 500}), Options{}))

	b = newLog()
	b.orphan(1, "a", 1, 100)
	b.hold(2, "a", 2, 0, 500, 600, 600)
	wantViolations(t, Check(b.input(kill, map[int]int64{1: 500}), Options{}), "overlap")
}

func TestCheckWorkerKilledWhileReleasingBelievedUntilItsLastCheck(t *testing.T) {
	// Worker 1 checked its lock live at 300, called Unlock at 301 (its rel record), and was killed at 500 before
	// its hold record. Worker 2 granted at 400 — after that release — overlaps with nothing worker 1 believed.
	kill := []Fault{{Kind: FaultKillHolder, Start: 500 * ms, End: 520 * ms, Procs: []int{1}}}
	b := newLog()
	b.orphanReleasing(1, "a", 1, 100, 300, 301)
	b.hold(2, "a", 2, 0, 400, 450, 450)
	r := Check(b.input(kill, map[int]int64{1: 500}), Options{})
	wantViolations(t, r)
	if r.Believed != 2 {
		t.Errorf("believed %d, want 2", r.Believed)
	}

	// A grant before its last live check is still an overlap.
	b = newLog()
	b.orphanReleasing(1, "a", 1, 100, 300, 301)
	b.hold(2, "a", 2, 0, 250, 450, 450)
	wantViolations(t, Check(b.input(kill, map[int]int64{1: 500}), Options{}), "overlap")
}

func TestCheckOrphanAcqOfLiveProcessIsALogError(t *testing.T) {
	b := newLog()
	b.orphan(1, "a", 1, 100)
	wantViolations(t, Check(b.input(nil, nil), Options{}), "log")
}

func TestCheckWorkerThatDiedUnexpectedly(t *testing.T) {
	b := newLog()
	b.hold(1, "a", 1, 0, 10, 20, 20)
	in := b.input(nil, nil)
	in.Records = in.Records[:len(in.Records)-1] // drop the exit record
	wantViolations(t, Check(in, Options{}), "worker")
}

func TestCheckUnsafeRestartOverlapIsBounded(t *testing.T) {
	// The server was killed at 1000 and answered again, empty, at 1050. Holder 1 (watchdog) got the lock at 900
	// from the old server; holder 2 got it at 1100 from the new one. Holder 1 believing until 1600 is within a
	// bound of 1 s after the restart; until 2500 is not.
	restart := []Fault{{Kind: FaultRestartNoPersist, Start: 1000 * ms, End: 1050 * ms}}
	b := newLog()
	b.lost(1, "a", 10, 900, 1600, 1610)
	b.hold(2, "a", 1, 1000, 1100, 1200, 1200)
	r := Check(b.input(restart, nil), Options{UnsafeRestartBound: time.Second})
	wantViolations(t, r)
	if r.UnsafeOverlaps != 1 || r.MaxUnsafeBelief != 550*time.Millisecond || r.TokenResets != 1 {
		t.Fatalf("unsafe overlaps %d max %v resets %d", r.UnsafeOverlaps, r.MaxUnsafeBelief, r.TokenResets)
	}

	b = newLog()
	b.lost(1, "a", 10, 900, 2500, 2510)
	b.hold(2, "a", 1, 1000, 1100, 1200, 1200)
	wantViolations(t, Check(b.input(restart, nil), Options{UnsafeRestartBound: time.Second}), "overlap")

	// Both from the new server: a plain violation.
	b = newLog()
	b.hold(1, "a", 1, 1000, 1100, 1300, 1300)
	b.hold(2, "a", 2, 1000, 1200, 1400, 1400)
	wantViolations(t, Check(b.input(restart, nil), Options{UnsafeRestartBound: time.Second}), "overlap")

	// A lease holder from before the restart may believe until its lease ends, not longer.
	b = newLog()
	r1 := b.lost(1, "a", 10, 900, 2000, 2010)
	r1.Lease = int64(time.Second)
	b.hold(2, "a", 1, 1000, 1100, 1200, 1200)
	wantViolations(t, Check(b.input(restart, nil), Options{UnsafeRestartBound: time.Hour}), "overlap")
}

func TestCheckPersistentRestartExplainsNothing(t *testing.T) {
	restart := []Fault{{Kind: FaultRestartPersist, Start: 1000 * ms, End: 1050 * ms}}
	b := newLog()
	b.lost(1, "a", 1, 900, 1600, 1610)
	b.hold(2, "a", 2, 1000, 1100, 1200, 1200)
	wantViolations(t, Check(b.input(restart, nil), Options{}), "overlap")
}

func TestCheckRecoveryAfterPartition(t *testing.T) {
	// Worker 1 is behind the partitioned proxy and holds "a" when the partition starts at 100; worker 2 takes
	// it over at 2150 (after the lease ended on the server); worker 1's own later acquisition does not count.
	part := []Fault{{Kind: FaultPartition, Start: 100 * ms, End: 4000 * ms, Procs: []int{1}}}
	b := newLog()
	b.lost(1, "a", 1, 50, 1900, 1950)
	b.hold(1, "b", 1, 0, 60, 70, 70) // released before the partition: "b" is not concerned
	b.hold(2, "a", 2, 2000, 2150, 2200, 2200)
	r := Check(b.input(part, nil), Options{})
	wantViolations(t, r)
	if len(r.Recoveries) != 1 || r.Recoveries[0].Took != 2050*time.Millisecond || r.Recoveries[0].Locks != 1 {
		t.Fatalf("recoveries %+v", r.Recoveries)
	}
}

func TestReadRecordsToleratesACutLastLine(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString(`{"k":"acq","l":"a","p":1,"g":0,"s":1,"a":5}` + "\n")
	buf.WriteString(`{"k":"hold","l":"a","p":1,"g":0,"s":1,"a":5,"ll":6}` + "\n")
	buf.WriteString(`{"k":"acq","l":"a","p":1,"g":0,"s":2,"a`)
	recs, err := ReadRecords(&buf)
	if err != nil || len(recs) != 2 || recs[1].LastLive != 6 {
		t.Fatalf("got %v %+v", err, recs)
	}
	buf.Reset()
	buf.WriteString(`{"k":"acq",` + "\n" + `{"k":"hold"}` + "\n")
	if _, err := ReadRecords(&buf); err == nil {
		t.Fatal("a malformed line in the middle must be an error")
	}
}

func TestLogRoundTrip(t *testing.T) {
	path := t.TempDir() + "/w.log"
	l, err := CreateLog(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Record{Kind: KindHold, Lock: "x", Proc: 3, G: 2, Seq: 9, Token: 42, Acquired: Now(), LastLive: Now()}
	l.Write(&want)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLogFile(path)
	if err != nil || len(got) != 1 || got[0] != want {
		t.Fatalf("got %v %+v, want %+v", err, got, want)
	}
}

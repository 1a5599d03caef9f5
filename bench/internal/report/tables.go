package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

// Table is one section of the report: rendered as aligned text, Markdown and
// HTML from the same cells.
type Table struct {
	ID      string // workload id ("w1", "ceiling")
	Title   string
	Note    string
	Headers []string
	Rows    [][]string
}

// oursName is the library the ratio columns compare against, per workload.
func oursName(w string) string {
	if w == workload.Raw {
		return "ours-conn"
	}
	return "ours"
}

// Tables builds every section of rep, in the order the workloads ran.
func Tables(rep *Report) []Table {
	out := []Table{ceilingTable(rep.Ceiling)}
	if t := configTable(rep.Records); len(t.Rows) > 0 {
		out = append(out, t)
	}
	seen := map[string]bool{}
	for _, r := range rep.Records {
		if seen[r.Workload] {
			continue
		}
		seen[r.Workload] = true
		recs := byWorkload(rep.Records, r.Workload)
		switch r.Workload {
		case workload.UncontendedPairs, workload.Raw:
			out = append(out, pairsTable(r.Workload, recs, rep.Ceiling))
		case workload.ContendedKeys:
			out = append(out, contendedTable(recs))
		case workload.HeldMany:
			out = append(out, heldTable(rep.Meta, recs))
		case workload.Handoff:
			out = append(out, handoffTable(recs))
		case workload.ContendedKeysSpread, workload.HandoffSpread:
			out = append(out, spreadTable(r.Workload, recs))
		case workload.AsyncPairs:
			out = append(out, asyncTable(recs, rep.Ceiling))
		}
	}
	return out
}

func byWorkload(recs []workload.Record, w string) []workload.Record {
	var out []workload.Record
	for _, r := range recs {
		if r.Workload == w {
			out = append(out, r)
		}
	}
	return out
}

// configTable lists every library (variants apart) with the configuration
// its adapter reported: client, pool, options.
func configTable(recs []workload.Record) Table {
	t := Table{ID: "config", Title: "Libraries and their configuration",
		Note: "As each adapter configured its library (the same in every case; G = the case's goroutines per " +
			"process). Pools are set explicitly, so that none shrinks or grows with GOMAXPROCS.",
		Headers: []string{"library", "configuration"}}
	seen := map[string]bool{}
	for _, r := range recs {
		if r.Config == "" || seen[r.Library] {
			continue
		}
		seen[r.Library] = true
		t.Rows = append(t.Rows, []string{r.Library, r.Config})
	}
	return t
}

// sameConfig reports whether a and b ran the same configuration (GOMAXPROCS
// aside): workload, goroutines, keys, processes.
func sameConfig(a, b workload.Record) bool {
	return a.Workload == b.Workload && a.Goroutines == b.Goroutines && a.Keys == b.Keys && a.Processes == b.Processes
}

// best returns the index of lib's fastest record (by median rate) of r's
// configuration: W1 and W2 run each library at every GOMAXPROCS of -procs,
// and each library is compared at its best. -1 when there is none.
func best(recs []workload.Record, lib string, r workload.Record) int {
	b := -1
	for i, o := range recs {
		if o.Library == lib && sameConfig(o, r) && o.NotApplicable == "" && (b < 0 || o.OpsPerSec > recs[b].OpsPerSec) {
			b = i
		}
	}
	return b
}

// ratio is "ours ÷ this library", best against best: ours' fastest row of
// the configuration divided by this library's fastest, shown on the
// library's fastest row only ("—" on its other rows, on ours' and when
// either side has nothing). When both were repeated and their min–max
// spreads overlap, the difference is within the runs' noise: a tie.
func ratio(recs []workload.Record, i int) string {
	r := recs[i]
	o := best(recs, oursName(r.Workload), r)
	if o < 0 || r.Library == recs[o].Library || r.OpsPerSec <= 0 || r.NotApplicable != "" ||
		best(recs, r.Library, r) != i {
		return "—"
	}
	x := recs[o].OpsPerSec / r.OpsPerSec
	if overlap(recs[o], r) {
		return fmt.Sprintf("tie (%.2f×)", x)
	}
	return fmt.Sprintf("%.2f×", x)
}

// overlap reports whether two repeated records' rate spreads overlap.
func overlap(a, b workload.Record) bool {
	if a.Repeats < 2 || b.Repeats < 2 {
		return false
	}
	return a.OpsPerSecMin <= b.OpsPerSecMax && b.OpsPerSecMin <= a.OpsPerSecMax
}

// rate is a headline rate cell: the median of the runs with their min–max
// spread when the case was repeated.
func rate(r workload.Record) string {
	if r.Repeats < 2 {
		return bold(count(r.OpsPerSec))
	}
	return bold(count(r.OpsPerSec)) + fmt.Sprintf(" (%s–%s)", count(r.OpsPerSecMin), count(r.OpsPerSecMax))
}

// ratioNote explains the ratio and spread columns, shared by every table
// that has them.
const ratioNote = " Rates are the median of the case's runs, with their min–max spread in brackets; latencies " +
	"are the median of the runs' percentiles; the other columns come from the median run, except violations, " +
	"lost locks and errors (summed over the runs) and stalled/waiting >1s (the worst run). ours÷lib is best " +
	"against best: ours' fastest row of the configuration (any GOMAXPROCS) divided by the library's fastest, " +
	"shown on that row; tie = the two rows' min–max spreads overlap."

// procs is the GOMAXPROCS cell: the value, marked when it was Go's default.
func procs(r workload.Record) string {
	switch {
	case r.GOMAXPROCS <= 0:
		return "—" // a report written before the field existed
	case r.GOMAXPROCSSet:
		return fmt.Sprint(r.GOMAXPROCS)
	}
	return fmt.Sprintf("%d (default)", r.GOMAXPROCS)
}

// ofCeiling is a row's share of its library's pair ceiling ("—" when not
// measured).
func ofCeiling(r workload.Record, c Ceiling) string {
	ceil := c.For(r.Library)
	if ceil <= 0 || r.OpsPerSec <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f%%", 100*r.OpsPerSec/ceil)
}

func ceilingTable(c Ceiling) Table {
	t := Table{ID: "ceiling", Title: "Server ceiling: each library's own lock commands, pipelined, on loopback",
		Headers: []string{"kind", "commands", "libraries", "pipeline", "pairs/s", "batch p50", "batch p99",
			"server CPU", "tool CPU", "other CPU", "unexpected replies"}}
	if c.Error != "" {
		t.Note = c.Error
		return t
	}
	t.Note = fmt.Sprintf("%d connections, each acquiring and releasing a key of its own in a loop, Pipeline pairs "+
		"per write (batch latency = one write's replies): every release finds the lock held once and releases "+
		"it, as a library's uncontended pair does, so pairs/s is what one server core sustains with those "+
		"commands, the tool's CPU competing with it on this machine. ÷ceiling divides a row by its library's "+
		"kind at P%d. It is not a limit for contended workloads (waiting, wake-ups and retries cost more), nor "+
		"for a server on its own machine; rueidislock's kind leaves out its client-side caching invalidations.",
		c.Clients, c.Pipeline)
	for _, r := range c.Runs {
		var k CeilingKind
		for _, x := range c.Kinds {
			if x.Name == r.Kind {
				k = x
			}
		}
		t.Rows = append(t.Rows, []string{r.Kind, k.Commands, strings.Join(k.Libraries, ", "),
			fmt.Sprintf("P%d", r.Pipeline), bold(count(r.PerSec)), ms(r.P50Ms), ms(r.P99Ms), cores(r.ServerCPU),
			cores(r.ToolCPU), other(r.OtherCPU, r.Disturbed), fmt.Sprint(r.Unexpected)})
	}
	return t
}

func pairsTable(w string, recs []workload.Record, c Ceiling) Table {
	t := Table{ID: w, Headers: []string{"library", "G", "GOMAXPROCS", "pairs/s", oursName(w) + "÷lib", "÷ceiling", "p50", "p99",
		"p99.9", "max", "stalled", "client cmds/op", "server cmds/op", "client CPU", "server CPU", "other CPU",
		"goroutines", "heap MB", "errors"}}
	if w == workload.UncontendedPairs {
		t.Title = "W1 — uncontended: G goroutines, each lock+unlock of its own key"
		t.Note = "One op = one acquire + one release (the pair); latency of the pair. stalled = goroutines whose pair " +
			"had been in flight for more than 1 s when the window closed (oldest in brackets). CPU figures are cores " +
			"used during the window; other CPU = machine - client - server (⚠ = above the threshold after reruns). " +
			"Each library runs at every GOMAXPROCS of -procs (by default Go's own and, with the server on this " +
			"machine, one CPU fewer: the client then leaves the server a core instead of competing with it for " +
			"both)." + ratioNote
	} else {
		t.Title = "Raw transports — EVALSHA acquire+release pairs on distinct keys"
		t.Note = "The same Redisson-style scripts sent by bare clients: ours-conn = locksmith's conn package " +
			"(conn.Client.Eval), rueidis and goredis = those clients' script APIs. This isolates the transport." +
			ratioNote
	}
	for i, r := range recs {
		if r.NotApplicable != "" {
			t.Rows = append(t.Rows, naRow(r.Library, []string{fmt.Sprint(r.Goroutines), procs(r)}, r.NotApplicable,
				len(t.Headers)))
			continue
		}
		t.Rows = append(t.Rows, []string{r.Library, fmt.Sprint(r.Goroutines), procs(r), rate(r),
			ratio(recs, i), ofCeiling(r, c), us(r.P50us), us(r.P99us), us(r.P999us), us(r.MaxUs),
			stalled(r.Stalled, r.StalledOldestMs), perOp(r.ClientCmdsPerOp, r.ClientCmdsEstimated),
			perOp(r.ServerCmdsPerOp, false), cores(r.ClientCPU), cores(r.ServerCPU), other(r.OtherCPU, r.Disturbed),
			fmt.Sprint(r.GoroutinesPeak), mb(r.HeapPeakBytes), errs(r)})
	}
	return t
}

func contendedTable(recs []workload.Record) Table {
	t := Table{ID: workload.ContendedKeys, Title: "W2 — contended: G goroutines on K keys (goroutine i uses key i%K), blocking acquire",
		Note: "acq/s = acquisitions in the window; wait = from starting to want the lock until holding it (retries, " +
			"back-off and re-calls after a give-up included). " + checkNote + " reacq% = acquisitions by the key's " +
			"previous holder (barging); Jain = fairness of " +
			"per-goroutine acquisitions (1 = even); waiting >1s = goroutines still waiting more than 1 s when the " +
			"window closed (oldest in brackets). No think time. All contenders share one process: libraries that hand " +
			"the lock to a local waiter in-process (ours, rueidislock's gate) are flattered relative to contention " +
			"between processes. As W1, each library runs at every GOMAXPROCS of -procs." + localHandoffNote + ratioNote,
		Headers: []string{"library", "G", "keys", "GOMAXPROCS", "local hand-off", "acq/s", "ours÷lib", "wait p50", "wait p99", "wait p99.9", "max",
			"waiting >1s", "client cmds/acq", "reacq%", "Jain", "min/max per G", "gave-ups",
			"violations marker/counter (exp/got)", "client CPU", "server CPU", "other CPU", "errors"}}
	for i, r := range recs {
		if r.NotApplicable != "" {
			t.Rows = append(t.Rows, naRow(r.Library, []string{fmt.Sprint(r.Goroutines), fmt.Sprint(r.Keys), procs(r),
				localHandoff(r.Library)}, r.NotApplicable, len(t.Headers)))
			continue
		}
		t.Rows = append(t.Rows, []string{r.Library, fmt.Sprint(r.Goroutines), fmt.Sprint(r.Keys), procs(r),
			localHandoff(r.Library), rate(r), ratio(recs, i), us(r.P50us), us(r.P99us), us(r.P999us), us(r.MaxUs),
			stalled(r.Waiting, r.WaitingOldestMs), perOp(r.ClientCmdsPerOp, r.ClientCmdsEstimated),
			fmt.Sprintf("%.0f", r.ReacqPct), fmt.Sprintf("%.2f", r.Jain), fmt.Sprintf("%d/%d", r.MinPerG, r.MaxPerG),
			fmt.Sprint(r.GaveUps), spreadViolations(r), cores(r.ClientCPU), cores(r.ServerCPU),
			other(r.OtherCPU, r.Disturbed), errs(r)})
	}
	return t
}

// spreadTable is W2x or W4x: the contenders spread over processes.
func spreadTable(w string, recs []workload.Record) Table {
	t := Table{ID: w, Headers: []string{"library", "P×G", "keys", "acq/s", "ours÷lib", "wait p50", "wait p99",
		"wait p99.9", "max", "waiting >1s", "Jain per process", "Jain per G", "min/max per process",
		"longest run", "reacq%", "gave-ups", "violations marker/counter (exp/got)", "client cmds/acq",
		"client CPU", "server CPU", "other CPU", "errors"}}
	common := "P processes of G goroutines each, every process its own client of the library; every process " +
		"warms up, then all open their window at one instant and close it together. " + checkNote + " Jain per process over the processes' acquisitions, per G over every goroutine's; longest run = most " +
		"consecutive grants to one process in the server's grant order; reacq% = grants whose previous holder " +
		"was the same goroutine (by the server)." + ratioNote
	if w == workload.ContendedKeysSpread {
		t.Title = "W2x — contended across processes: P processes × G goroutines on K keys, blocking acquire"
		t.Note = "wait = from starting to want the lock until holding it. " + common
	} else {
		t.Title = "W4x — hand-off latency across processes: P processes × G goroutines on one key"
		t.Headers[3] = "hand-offs/s"
		t.Headers[5], t.Headers[6], t.Headers[7] = "p50", "p99", "p99.9"
		t.Note = "A goroutine that unlocks does not ask again until another goroutine holds the lock (the next " +
			"holder's check script wakes it through the server with the instant it acquired), so every " +
			"acquisition is a hand-off; latency = from just before the releaser's Unlock call to the next " +
			"holder's Lock returning, in whichever process. " + common
	}
	if slices.ContainsFunc(recs, func(r workload.Record) bool { return r.Library == "fifo" }) {
		t.Note += " fifo is a reference, not a lock: the least work a first come, first served hand-over " +
			"through the server does (RPUSH to queue, one script to pass the lock to the head, a BLPOP " +
			"wake-up on the head's own list; no lease, no expiry)."
	}
	for i, r := range recs {
		shape := fmt.Sprintf("%d×%d", r.Processes, r.Goroutines)
		if r.NotApplicable != "" {
			t.Rows = append(t.Rows, naRow(r.Library, []string{shape, fmt.Sprint(r.Keys)}, r.NotApplicable,
				len(t.Headers)))
			continue
		}
		t.Rows = append(t.Rows, []string{r.Library, shape, fmt.Sprint(r.Keys), rate(r),
			ratio(recs, i), us(r.P50us), us(r.P99us), us(r.P999us), us(r.MaxUs),
			stalled(r.Waiting, r.WaitingOldestMs), fmt.Sprintf("%.2f", r.JainPerProcess), fmt.Sprintf("%.2f", r.Jain),
			fmt.Sprintf("%d/%d", r.MinPerProcess, r.MaxPerProcess), fmt.Sprint(r.LongestRun),
			fmt.Sprintf("%.0f", r.ReacqPct), fmt.Sprint(r.GaveUps), spreadViolations(r),
			perOp(r.ClientCmdsPerOp, r.ClientCmdsEstimated), cores(r.ClientCPU), cores(r.ServerCPU),
			other(r.OtherCPU, r.Disturbed), errs(r)})
	}
	return t
}

// localHandoff says whether the library passes a released lock to a waiter
// of the same process without the server's help: what makes one-process W2
// and W4 flatter it against contention between processes (W2x, W4x).
func localHandoff(lib string) string {
	base, _, _ := strings.Cut(lib, ":")
	switch base {
	case "ours":
		return "yes (waiter queue)"
	case "rueidislock":
		return "yes (gate)"
	}
	return "no"
}

// localHandoffNote explains the column.
const localHandoffNote = " local hand-off = the library passes a released lock to a waiter of its own process " +
	"without a server round trip (all contenders share one process here: compare with W2x/W4x)."

// checkNote describes the critical section's checks (W2, W4, W2x, W4x).
const checkNote = "Inside the critical section, on a connection of its own, each holder runs a check script on " +
	"entry (SET an owner marker NX, INCR the key's grant sequence, read a counter) and, after the hold " +
	"(-cs-hold, yielding), one on exit (delete the marker if still its own, write the counter + 1): violations " +
	"= markers found taken or changed / keys whose server counter differs from the acquisitions checked (the " +
	"counter's expected/got in brackets) plus in-process overlaps and counter mismatches; client cmds leave the " +
	"check's scripts out."

// spreadViolations is "marker/other (expected/got)": marker violations,
// the other violations (counters, in-process overlaps), and the server
// counter's expected and final values; bold when any.
func spreadViolations(r workload.Record) string {
	s := fmt.Sprintf("%d/%d (%d/%d)", r.MarkerViolations, r.Violations-r.MarkerViolations,
		r.ServerCounterExpected, r.ServerCounterGot)
	if r.Violations > 0 {
		return bold(s)
	}
	return s
}

func heldTable(m Meta, recs []workload.Record) Table {
	t := Table{ID: workload.HeldMany,
		Title: fmt.Sprintf("W3 — many held locks: N=%d, watchdog TTL %s, held %s", m.N, secs(m.TTLSec), secs(m.HoldSec)),
		Note: "Each library keeps the locks alive its own way, every TTL/3: ours by its watchdog (renewals " +
			"batched into one script per batch of locks), rueidislock by itself (ExtendInterval TTL/3); redsync " +
			"(Mutex.Extend) and bsm/redislock (Lock.Refresh) by one goroutine per lock with a ticker, as their " +
			"users write it. Every adapter keeps its lock object per held lock (ours its *rlock.Lock handle and " +
			"held context). Heap, stacks, goroutines and RSS are sampled mid-hold after a forced GC (base = " +
			"before the first acquire); stacks are not in the heap figure. locks renewed/s = the expiry commands " +
			"(PEXPIRE/PEXPIREAT) the server ran per second, inside scripts included: the work every library must " +
			"do (N ÷ (TTL/3)); renew cmds/s = EVALSHA+EVAL calls/s the clients sent for it (expected = N ÷ batch " +
			"÷ renewal interval): what batching saves in calls, not in server work; server cmds/s counts every " +
			"command the server ran, inside scripts included. lost = locks the library reported lost / locks the " +
			"server no longer showed as held by their owner at the end of the hold.",
		Headers: []string{"library", "acquired", "acquire time", "goroutines base→hold", "heap MB base→hold",
			"heap KB/lock", "stack MB", "RSS MB", "locks renewed/s", "renew cmds/s (expected)", "client cmds/s",
			"server cmds/s", "client CPU", "server CPU", "other CPU", "lost lib/server", "release time", "errors"}}
	for _, r := range recs {
		if r.NotApplicable != "" {
			t.Rows = append(t.Rows, naRow(r.Library, nil, r.NotApplicable, len(t.Headers)))
			continue
		}
		clientPerSec := "—"
		if r.WindowSec > 0 && r.ClientCmds >= 0 {
			clientPerSec = count(float64(r.ClientCmds) / r.WindowSec)
			if r.ClientCmdsEstimated {
				clientPerSec += "*"
			}
		}
		t.Rows = append(t.Rows, []string{r.Library, fmt.Sprintf("%d/%d", r.Acquired, r.Keys), secs(r.AcquireSec),
			fmt.Sprintf("%d→%d", r.GoroutinesBase, r.GoroutinesHold),
			fmt.Sprintf("%s→%s", mb(r.HeapBaseBytes), mb(r.HeapHoldBytes)),
			fmt.Sprintf("%.2f", r.HeapBytesPerLock/1024), mb(r.StackHoldBytes), fmt.Sprintf("%.0f", float64(r.RSSHoldBytes)/(1<<20)),
			count(r.LocksRenewedPerSec), fmt.Sprintf("**%s** (%s)", count(r.RenewCmdsPerSec), count(r.RenewCmdsExpected)),
			clientPerSec,
			count(r.ServerCmdsPerSec), cores(r.ClientCPU), cores(r.ServerCPU), other(r.OtherCPU, r.Disturbed),
			fmt.Sprintf("**%d/%d**", r.LostLib, r.LostServer), secs(r.ReleaseSec), errs(r)})
	}
	return t
}

func handoffTable(recs []workload.Record) Table {
	t := Table{ID: workload.Handoff, Title: "W4 — hand-off latency: G goroutines on one key",
		Note: "A goroutine that unlocks does not ask again until another goroutine holds the lock, so every " +
			"acquisition is a hand-off. Latency = from just before the releaser's Unlock call to the next holder's " +
			"Lock returning (release round trip + wake-up + acquire round trip + any back-off); the next holder " +
			"wakes the releaser through the server (see W4x). " + checkNote + localHandoffNote + ratioNote,
		Headers: []string{"library", "G", "local hand-off", "hand-offs/s", "ours÷lib", "p50", "p99", "p99.9", "max", "waiting >1s",
			"gave-ups", "violations marker/counter (exp/got)", "client cmds/hand-off", "client CPU", "server CPU", "other CPU", "errors"}}
	for i, r := range recs {
		if r.NotApplicable != "" {
			t.Rows = append(t.Rows, naRow(r.Library, []string{fmt.Sprint(r.Goroutines), localHandoff(r.Library)},
				r.NotApplicable, len(t.Headers)))
			continue
		}
		t.Rows = append(t.Rows, []string{r.Library, fmt.Sprint(r.Goroutines), localHandoff(r.Library), rate(r),
			ratio(recs, i), us(r.P50us), us(r.P99us), us(r.P999us), us(r.MaxUs),
			stalled(r.Waiting, r.WaitingOldestMs), fmt.Sprint(r.GaveUps), spreadViolations(r),
			perOp(r.ClientCmdsPerOp, r.ClientCmdsEstimated), cores(r.ClientCPU), cores(r.ServerCPU),
			other(r.OtherCPU, r.Disturbed), errs(r)})
	}
	return t
}

func asyncTable(recs []workload.Record, c Ceiling) Table {
	t := Table{ID: workload.AsyncPairs, Title: "W5 — async: one goroutine keeping K lock+unlock pairs in flight",
		Note: "LockAsync/UnlockAsync from a single goroutine reacting to completions; each key has one pair in " +
			"flight. Libraries without an async API are listed as n/a rather than emulated with goroutines." +
			ratioNote,
		Headers: []string{"library", "keys", "pairs/s", "÷ceiling", "p50", "p99", "p99.9", "max", "stalled",
			"goroutines", "client cmds/op", "server cmds/op", "client CPU", "server CPU", "other CPU", "errors"}}
	for _, r := range recs {
		if r.NotApplicable != "" {
			t.Rows = append(t.Rows, naRow(r.Library, []string{fmt.Sprint(r.Keys)}, r.NotApplicable, len(t.Headers)))
			continue
		}
		t.Rows = append(t.Rows, []string{r.Library, fmt.Sprint(r.Keys), rate(r),
			ofCeiling(r, c), us(r.P50us), us(r.P99us), us(r.P999us), us(r.MaxUs),
			stalled(r.Stalled, r.StalledOldestMs), fmt.Sprint(r.GoroutinesPeak),
			perOp(r.ClientCmdsPerOp, r.ClientCmdsEstimated), perOp(r.ServerCmdsPerOp, false), cores(r.ClientCPU),
			cores(r.ServerCPU), other(r.OtherCPU, r.Disturbed), errs(r)})
	}
	return t
}

// naRow is a row for a library that lacks the workload's feature: the
// library, its configuration cells, then "n/a: reason" in the next cell and
// empty cells after it.
func naRow(lib string, config []string, reason string, width int) []string {
	row := make([]string, width)
	row[0] = lib
	copy(row[1:], config)
	reason = strings.TrimPrefix(reason, "workload: not supported by this library: ")
	row[1+len(config)] = naPrefix + reason
	return row
}

const naPrefix = "n/a: "

// naIndex returns the index of a row's n/a cell, or -1.
func naIndex(r []string) int {
	for i, c := range r {
		if strings.HasPrefix(c, naPrefix) {
			return i
		}
	}
	return -1
}

// Cell formatting. bold marks the headline figure (** in Markdown, <b> in
// HTML, dropped in text).
func bold(s string) string { return "**" + s + "**" }

func count(v float64) string {
	if v <= 0 || math.IsNaN(v) {
		return "0"
	}
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// us formats a latency given in microseconds.
func us(v float64) string {
	switch {
	case v <= 0:
		return "—"
	case v < 1000:
		return fmt.Sprintf("%.0f µs", v)
	case v < 10_000:
		return fmt.Sprintf("%.2f ms", v/1e3)
	case v < 100_000:
		return fmt.Sprintf("%.1f ms", v/1e3)
	case v < 10_000_000:
		return fmt.Sprintf("%.0f ms", v/1e3)
	default:
		return fmt.Sprintf("%.1f s", v/1e6)
	}
}

func ms(v float64) string { return us(v * 1e3) }

func secs(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.2f s", v)
	}
	return fmt.Sprintf("%.0f s", v)
}

func cores(v float64) string { return fmt.Sprintf("%.2f", v) }

func other(v float64, disturbed bool) string {
	if disturbed {
		return fmt.Sprintf("%.2f ⚠", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func perOp(v float64, estimated bool) string {
	if estimated {
		return fmt.Sprintf("%.2f*", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func mb(b uint64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

func stalled(n int, oldestMs float64) string {
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("**%d** (%s)", n, us(oldestMs*1e3))
}

func errs(r workload.Record) string {
	if r.Errors == 0 && r.Abandoned == 0 {
		return "0"
	}
	s := fmt.Sprint(r.Errors)
	if r.ErrorSample != "" {
		s += ": " + truncate(r.ErrorSample, 80)
	}
	if r.Abandoned > 0 {
		s += fmt.Sprintf(" (%d abandoned)", r.Abandoned)
	}
	return s
}

func truncate(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

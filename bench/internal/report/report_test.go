package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

func sampleReport() *Report {
	cdf := []workload.Point{{Us: 50, Pct: 0}, {Us: 100, Pct: 50}, {Us: 400, Pct: 99}, {Us: 900, Pct: 100}}
	hist := []workload.Bar{{UpToUs: 107.63474115247546, Count: 10}, {UpToUs: 128, Count: 5}}
	rec := func(w, lib string, g, keys int, ops float64) workload.Record {
		return workload.Record{Workload: w, Library: lib, Goroutines: g, Keys: keys, OpsPerSec: ops, Ops: int64(ops),
			P50us: 100, P99us: 400, P999us: 800, MaxUs: 900, LatencyCDF: cdf, LatencyHistogram: hist, ClientCmds: 10}
	}
	c := Ceiling{Clients: 16, Scripts: "test",
		Kinds: []CeilingKind{{Name: CeilingRlock, Commands: "rlock's scripts", Libraries: []string{"ours"}},
			{Name: CeilingRedsync, Commands: "SET NX, delete script", Libraries: []string{"redsync"}}},
		Runs: []CeilingRun{
			{Kind: CeilingRlock, Pipeline: 1, PerSec: 50_000}, {Kind: CeilingRlock, Pipeline: 16, PerSec: 100_000},
			{Kind: CeilingRedsync, Pipeline: 1, PerSec: 60_000}, {Kind: CeilingRedsync, Pipeline: 16, PerSec: 150_000},
		}}
	c.Finish()
	w2x := rec(workload.ContendedKeysSpread, "ours", 8, 1, 4000)
	w2x.Processes, w2x.JainPerProcess, w2x.LongestRun = 8, 0.9, 12
	w3 := rec(workload.HeldMany, "ours", 64, 1000, 5000)
	w3.Acquired, w3.RenewCmdsPerSec, w3.RenewCmdsExpected = 1000, 10, 10
	return &Report{
		Meta: Meta{Started: time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC), NumCPU: 2, N: 1000, OtherMax: 0.25,
			Workloads: []string{"w1", "w2", "w3", "w4", "w5", "raw"}, Libraries: []string{"ours", "redsync", "rueidis"}},
		Ceiling: c,
		Records: []workload.Record{
			rec(workload.UncontendedPairs, "ours", 64, 64, 90_000), rec(workload.UncontendedPairs, "redsync", 64, 64, 30_000),
			rec(workload.ContendedKeys, "ours", 64, 1, 8000), rec(workload.ContendedKeys, "redsync", 64, 1, 10_000), w2x,
			w3, {Workload: workload.HeldMany, Library: "rueidis", Keys: 1000, NotApplicable: "workload: not supported by this library: no watchdog or extend API"},
			rec(workload.Handoff, "ours", 2, 1, 7000),
			rec(workload.AsyncPairs, "ours", 1, 1024, 120_000),
			rec(workload.Raw, "ours-conn", 64, 64, 100_000), rec(workload.Raw, "rueidis", 64, 64, 80_000),
		},
	}
}

func TestCeilingKindsTakeTheDeepestPipelineAndMapEveryLibrary(t *testing.T) {
	c := sampleReport().Ceiling
	if c.Pipeline != 16 || c.PairsPerSec != 100_000 {
		t.Fatalf("ceiling %+v", c)
	}
	for lib, want := range map[string]float64{"ours": 100_000, "ours:lease": 100_000, "rueidis:flush": 100_000,
		"goredis": 100_000, "redsync:1ms": 150_000, "redislock": 0, "nope": 0} {
		if got := c.For(lib); got != want {
			t.Errorf("For(%s) = %v, want %v", lib, got, want)
		}
	}
}

func cell(t *testing.T, tb Table, lib, header string) string {
	t.Helper()
	col := -1
	for i, h := range tb.Headers {
		if h == header {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("%s: no column %q in %v", tb.ID, header, tb.Headers)
	}
	for _, r := range tb.Rows {
		if r[0] == lib {
			return r[col]
		}
	}
	t.Fatalf("%s: no row for %s", tb.ID, lib)
	return ""
}

func TestTablesCarryRatiosToOursAndToTheCeiling(t *testing.T) {
	tables := map[string]Table{}
	for _, tb := range Tables(sampleReport()) {
		tables[tb.ID] = tb
	}
	for _, id := range []string{"ceiling", "w1", "w2", "w3", "w4", "w5", "raw"} {
		if _, ok := tables[id]; !ok {
			t.Fatalf("no %s table", id)
		}
	}
	if got := cell(t, tables["w1"], "redsync", "ours÷lib"); got != "3.00×" {
		t.Errorf("W1 ours÷redsync = %q, want 3.00×", got)
	}
	if got := cell(t, tables["w1"], "redsync", "÷ceiling"); got != "20%" {
		t.Errorf("W1 redsync÷ceiling = %q, want 20%% (of its own kind's 150k)", got)
	}
	if got := cell(t, tables["w1"], "ours", "÷ceiling"); got != "90%" {
		t.Errorf("W1 ours÷ceiling = %q, want 90%%", got)
	}
	if got := cell(t, tables["w2"], "redsync", "ours÷lib"); got != "0.80×" {
		t.Errorf("W2 ours÷redsync = %q, want 0.80×", got)
	}
	if got := cell(t, tables["raw"], "rueidis", "ours-conn÷lib"); got != "1.25×" {
		t.Errorf("raw ours-conn÷rueidis = %q, want 1.25×", got)
	}
	if got := cell(t, tables["w3"], "rueidis", "acquired"); !strings.HasPrefix(got, "n/a: no watchdog") {
		t.Errorf("W3 rueidis = %q, want an n/a row", got)
	}
}

func TestRatiosAreBestAgainstBestAndSpreadsThatOverlapAreTies(t *testing.T) {
	rec := func(lib string, procs int, set bool, ops, lo, hi float64) workload.Record {
		return workload.Record{Workload: workload.UncontendedPairs, Library: lib, Goroutines: 1024, Keys: 1024, OpsPerSec: ops,
			GOMAXPROCS: procs, GOMAXPROCSSet: set, Repeats: 5, OpsPerSecMin: lo, OpsPerSecMax: hi}
	}
	recs := []workload.Record{rec("ours", 2, false, 100_000, 95_000, 105_000), rec("rueidis", 2, false, 80_000, 78_000, 82_000),
		rec("ours", 1, true, 120_000, 115_000, 125_000), rec("rueidis", 1, true, 60_000, 58_000, 62_000),
		rec("goredis", 2, false, 110_000, 90_000, 116_000)}
	tb := pairsTable(workload.UncontendedPairs, recs, Ceiling{})
	var got []string
	for _, row := range tb.Rows {
		got = append(got, row[0]+" "+row[2]+" "+row[4])
	}
	// rueidis' best row (80k) against ours' best (120k): 1.50×, on that row only; goredis' spread reaches ours'.
	want := []string{"ours 2 (default) —", "rueidis 2 (default) 1.50×", "ours 1 —", "rueidis 1 —",
		"goredis 2 (default) tie (1.09×)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("rows (library, GOMAXPROCS, ours÷lib) = %q, want %q", got, want)
	}
	if c := tb.Rows[0][3]; c != "**100,000** (95,000–105,000)" {
		t.Errorf("rate cell = %q, want the median with its spread", c)
	}
	if l := recs[2].Label(); l != "ours GOMAXPROCS=1" {
		t.Fatalf("label of a chosen GOMAXPROCS = %q", l)
	}
	if l := recs[0].Label(); l != "ours" {
		t.Fatalf("label with Go's default = %q", l)
	}
}

func TestAggregateTakesMediansAndKeepsEveryViolation(t *testing.T) {
	runs := []workload.Record{
		{OpsPerSec: 300, P99us: 10, Errors: 1, ErrorSample: "boom", Waiting: 0, Notes: []string{"a"}},
		{OpsPerSec: 100, P99us: 30, Violations: 2, Waiting: 3, WaitingOldestMs: 1500, Disturbed: true},
		{OpsPerSec: 200, P99us: 20, ClientCPU: 0.7, Lost: 1, Notes: []string{"a", "b"}},
	}
	r := Aggregate(runs)
	if r.Repeats != 3 || r.OpsPerSec != 200 || r.OpsPerSecMin != 100 || r.OpsPerSecMax != 300 ||
		len(r.OpsPerSecRuns) != 3 {
		t.Fatalf("rate: %+v", r)
	}
	if r.P99us != 20 || r.ClientCPU != 0.7 {
		t.Errorf("p99 %v (median 20), client CPU %v (the median run's 0.7)", r.P99us, r.ClientCPU)
	}
	if r.Violations != 2 || r.Errors != 1 || r.ErrorSample != "boom" || r.Lost != 1 || r.Waiting != 3 ||
		r.WaitingOldestMs != 1500 || !r.Disturbed || len(r.Notes) != 2 {
		t.Errorf("kept from every run: %+v", r)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median of an even count = %v", m)
	}
	na := Aggregate([]workload.Record{{NotApplicable: "no watchdog"}, {NotApplicable: "no watchdog"}})
	if na.NotApplicable == "" || na.Repeats != 2 {
		t.Errorf("not applicable: %+v", na)
	}
}

func TestTextAlignsColumns(t *testing.T) {
	text := Text(sampleReport())
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "library ") || !strings.Contains(l, "pairs/s") {
			continue
		}
		end := strings.Index(l, "pairs/s") + len("pairs/s")
		endRunes := utf8.RuneCountInString(l[:end])
		for _, row := range lines[i+1 : i+3] {
			// Right-aligned: the figure ends where the header ends.
			r := []rune(row)
			if len(r) < endRunes || r[endRunes-1] == ' ' || (len(r) > endRunes && r[endRunes] != ' ') {
				t.Fatalf("column not aligned:\n%s\n%s", l, row)
			}
		}
		return
	}
	t.Fatalf("no W1 table in:\n%s", text)
}

func TestMarkdownHasATablePerSection(t *testing.T) {
	md := Markdown(sampleReport())
	for _, want := range []string{"## W1 — uncontended", "| library | G | GOMAXPROCS | pairs/s |", "**90,000**", "|---|---:|"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
}

func TestHTMLIsSelfContainedAndHasTheCharts(t *testing.T) {
	page, err := HTML(sampleReport())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, "echarts.init") || !strings.Contains(page, "Apache Software Foundation") {
		t.Fatal("the page does not carry ECharts inline")
	}
	if strings.Contains(page, "<script src=") {
		t.Fatal("the page loads a script from elsewhere")
	}
	for _, id := range []string{"c_w1_throughput", "c_w1_G64_cdf", "c_w1_G64_hist", "c_w2_fairness", "c_w3_mem",
		"c_raw_G64_cdf", "c_ceiling", "c_w2x_throughput", "c_w2x_fairness", "c_w2x_8x8_keys1_cdf"} {
		if !strings.Contains(page, "id=\""+id+"\"") {
			t.Errorf("no chart %s", id)
		}
	}
	if !strings.Contains(page, "<b>90,000</b>") {
		t.Error("headline figures are not bold")
	}
}

func TestJSONRoundTripKeepsEveryRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	rep := sampleReport()
	if err := WriteJSON(path, rep); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Records) != len(rep.Records) || back.Ceiling.PairsPerSec != rep.Ceiling.PairsPerSec {
		t.Fatalf("round trip lost data: %d records, pairs %v", len(back.Records), back.Ceiling.PairsPerSec)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"heap_bytes_per_lock": 0`) {
		t.Error("a zero schema field was omitted")
	}
}

func TestW2xTableSaysTheFIFORowIsAReference(t *testing.T) {
	rec := func(lib string, ops float64) workload.Record {
		return workload.Record{Workload: workload.ContendedKeysSpread, Library: lib, Processes: 64, Goroutines: 1,
			Keys: 1, OpsPerSec: ops, Ops: int64(ops)}
	}
	ours, fifo := rec("ours", 2000), rec("fifo", 2500)
	tb := spreadTable(workload.ContendedKeysSpread, []workload.Record{ours})
	if strings.Contains(tb.Note, "fifo") {
		t.Errorf("note without a fifo row mentions it: %s", tb.Note)
	}
	tb = spreadTable(workload.ContendedKeysSpread, []workload.Record{ours, fifo})
	if !strings.Contains(tb.Note, "fifo is a reference, not a lock") {
		t.Errorf("note with a fifo row does not say what it is: %s", tb.Note)
	}
	if got := cell(t, tb, "fifo", "ours÷lib"); got != "0.80×" {
		t.Errorf("ours÷fifo = %q, want 0.80×", got)
	}
}

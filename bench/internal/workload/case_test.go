package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func spec(w string, g, keys int) Spec {
	return Spec{Workload: w, Library: "mem", Goroutines: g, Keys: keys,
		Duration: 200 * time.Millisecond, Warmup: 20 * time.Millisecond, Hold: 100 * time.Millisecond, RunID: "test"}
}

func run(t *testing.T, lib Library, s Spec) Record {
	t.Helper()
	win := &countingWindow{}
	r, err := Run(context.Background(), lib, s, win)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if r.NotApplicable == "" && (win.begins.Load() != 1 || win.ends.Load() != 1) {
		t.Fatalf("window handshakes: %d begins, %d ends; want 1 and 1", win.begins.Load(), win.ends.Load())
	}
	return r
}

func TestUnknownWorkloadIsAnError(t *testing.T) {
	if _, err := Run(context.Background(), newMemLib(), spec("w9", 1, 1), nil); err == nil {
		t.Fatal("no error for workload w9")
	}
}

func TestCaseRunsAtTheGOMAXPROCSItIsGivenAndRecordsIt(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	factories := map[string]Factory{"mem": func(context.Context, Config) (Library, error) { return newMemLib(), nil }}
	for _, c := range []struct {
		procs string
		want  int
		set   bool
	}{{"0", runtime.GOMAXPROCS(0), false}, {"1", 1, true}} {
		var out, errOut bytes.Buffer
		code := CaseMain([]string{"-lib", "mem", "-g", "2", "-duration", "50ms", "-warmup", "0s", "-procs", c.procs},
			factories, strings.NewReader(""), &out, &errOut)
		if code != 0 {
			t.Fatalf("-procs %s: exit %d: %s", c.procs, code, errOut.String())
		}
		var m Message
		if err := json.Unmarshal(out.Bytes(), &m); err != nil || m.Record == nil {
			t.Fatalf("-procs %s: output %q: %v", c.procs, out.String(), err)
		}
		if m.Record.GOMAXPROCS != c.want || m.Record.GOMAXPROCSSet != c.set || m.Record.Ops == 0 {
			t.Errorf("-procs %s: record GOMAXPROCS %d (set %t), %d ops; want %d (set %t)", c.procs,
				m.Record.GOMAXPROCS, m.Record.GOMAXPROCSSet, m.Record.Ops, c.want, c.set)
		}
	}
	var errOut bytes.Buffer
	if code := CaseMain([]string{"-lib", "mem", "-procs", "-2"}, factories, strings.NewReader(""), io.Discard,
		&errOut); code != 2 || !strings.Contains(errOut.String(), "-procs -2") {
		t.Errorf("-procs -2: exit %d, %q; want 2 and a message naming the flag", code, errOut.String())
	}
}

func TestCaseFlagsOfAOneProcessCaseParse(t *testing.T) {
	var out bytes.Buffer
	f := CaseFlags{Addr: "127.0.0.1:1", Spec: Spec{Workload: UncontendedPairs, Library: "nope", Goroutines: 1, Keys: 1}}
	var stderr bytes.Buffer
	// An unknown library fails after the flags parsed (exit 2 with its own message).
	CaseMain(f.Args(), map[string]Factory{}, strings.NewReader(""), &out, &stderr)
	if !strings.Contains(stderr.String(), `unknown library "nope"`) {
		t.Fatalf("the flags of a one-process case do not parse: %s", stderr.String())
	}
}

func TestCaseWritesARuntimeTraceIntoTraceDir(t *testing.T) {
	factories := map[string]Factory{"mem": func(context.Context, Config) (Library, error) { return newMemLib(), nil }}
	dir := filepath.Join(t.TempDir(), "traces") // made by the case
	s := Spec{Workload: UncontendedPairs, Library: "mem", Goroutines: 2, Keys: 1, Duration: 50 * time.Millisecond,
		Process: 0, Processes: 1, TraceDir: dir}
	var out, errOut bytes.Buffer
	if code := CaseMain(CaseFlags{Spec: s}.Args(), factories, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != TraceFile(s, os.Getpid()) {
		t.Fatalf("trace directory holds %v (%v); want only %s", entries, err, TraceFile(s, os.Getpid()))
	}
	b, err := os.ReadFile(filepath.Join(dir, entries[0].Name()))
	header := b[:min(len(b), 16)]
	if err != nil || !bytes.HasPrefix(header, []byte("go 1.")) || !bytes.Contains(header, []byte(" trace")) {
		t.Fatalf("the trace file does not start with a runtime trace header: %q (%v)", header, err)
	}

	// A directory that cannot be made is a usage error that names the problem, before anything runs.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.TraceDir = filepath.Join(blocker, "traces")
	errOut.Reset()
	if code := CaseMain(CaseFlags{Spec: s}.Args(), factories, strings.NewReader(""), io.Discard, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), "-trace-dir "+s.TraceDir) {
		t.Errorf("unwritable -trace-dir: exit %d, %q; want 2 and a message naming the flag and its path", code,
			errOut.String())
	}
}

func TestTraceFilesOfTheProcessesOfACaseDiffer(t *testing.T) {
	s := Spec{Workload: ContendedKeysSpread, Library: "redsync:1ms", Goroutines: 8}
	a, b := TraceFile(s, 10), s
	b.Process = 1
	if a == TraceFile(b, 10) || a == TraceFile(s, 11) || strings.ContainsAny(a, ":/") {
		t.Errorf("trace file names %q, %q, %q: want distinct names per process and pid, without ':' or '/'", a,
			TraceFile(b, 10), TraceFile(s, 11))
	}
}

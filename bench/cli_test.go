package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/report"
)

// TestQuickRunEndToEnd builds the CLI, runs it with -quick against its own
// embedded redis-server with ours (when this build has it) and peers, and
// validates the JSON report against the schema (report/report.schema.json)
// and its figures (no error, no violation, no lock lost, every window
// sampled), plus the HTML and Markdown outputs.
func TestQuickRunEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the end-to-end run builds two binaries and runs ~20 cases")
	}
	for _, bin := range []string{"redis-server"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found: apt-get install -y redis-server (or make deps)", bin)
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bench")
	gobin, err := exec.LookPath("go") // go test puts its own GOROOT/bin first in PATH
	if err != nil {
		t.Fatalf("the go command is not in PATH: %v", err)
	}
	build := exec.Command(gobin, "build", "-o", bin, ".")
	build.Dir = "."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./bench: %v\n%s", err, out)
	}

	libs := []string{"redislock", "rueidis"}
	if _, ok := oursFactories()["ours"]; ok {
		libs = []string{"ours", "redislock"}
	}
	jsonPath := filepath.Join(dir, "report.json")
	htmlPath := filepath.Join(dir, "report.html")
	mdPath := filepath.Join(dir, "report.md")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-quick", "-libs", strings.Join(libs, ","), "-json", jsonPath,
		"-html", htmlPath, "-markdown", mdPath, "-progress", "off", "-quiet-wait", "0s",
		"-ceiling-duration", "300ms")
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(gobin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("bench -quick -libs %s took %v", strings.Join(libs, ","), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "W1 — uncontended") || !strings.Contains(string(out), "pair ceiling of rlock's scripts") {
		t.Fatalf("no table in the output:\n%s", out)
	}

	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Validate(raw); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("report is not JSON: %v", err)
	}
	ceiling, ok := doc["ceiling"].(map[string]any)
	if !ok {
		t.Fatalf("no ceiling object in %s", raw[:min(len(raw), 500)])
	}
	for _, k := range []string{"pairs_per_sec"} {
		if v, ok := ceiling[k].(float64); !ok || v <= 0 {
			t.Errorf("ceiling.%s = %v, want a positive number (error: %v)", k, ceiling[k], ceiling["error"])
		}
	}
	records, ok := doc["records"].([]any)
	if !ok || len(records) == 0 {
		t.Fatal("no records")
	}
	seen := map[string]bool{}
	for i, x := range records {
		rec, ok := x.(map[string]any)
		if !ok {
			t.Fatalf("record %d is %T", i, x)
		}
		w, lib := rec["workload"].(string), rec["library"].(string)
		seen[w+"/"+lib] = true
		label := fmt.Sprintf("%s %s G=%v keys=%v", w, lib, rec["goroutines"], rec["keys"])
		if na, _ := rec["not_applicable"].(string); na != "" {
			if w != "w3" && w != "w5" {
				t.Errorf("%s: not applicable (%s)", label, na)
			}
			continue
		}
		if e := rec["errors"].(float64); e != 0 {
			t.Errorf("%s: %v errors: %v", label, e, rec["error_sample"])
		}
		if rec["violations"].(float64) != 0 || rec["lost"].(float64) != 0 {
			t.Errorf("%s: violations %v, lost %v", label, rec["violations"], rec["lost"])
		}
		if w != "w3" && rec["ops_per_sec"].(float64) <= 0 {
			t.Errorf("%s: no operation completed", label)
		}
		if w == "w3" && rec["acquired"].(float64) != rec["keys"].(float64) {
			t.Errorf("%s: acquired %v of %v", label, rec["acquired"], rec["keys"])
		}
		if rec["server_cpu"].(float64) <= 0 || rec["client_cpu"].(float64) <= 0 {
			t.Errorf("%s: client CPU %v, server CPU %v: the window was not sampled", label, rec["client_cpu"],
				rec["server_cpu"])
		}
	}
	for _, w := range []string{"w1", "w2", "w2x", "w3", "w4", "w4x", "w5"} {
		for _, lib := range libs {
			if !seen[w+"/"+lib] {
				t.Errorf("no %s record for %s", w, lib)
			}
		}
	}
	if !seen["raw/"+transports(libs)[0]] {
		t.Errorf("no raw record for %s", transports(libs)[0])
	}

	page, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "echarts.init") || !strings.Contains(string(page), "c_w1_throughput") {
		t.Error("the HTML report has no charts")
	}
	md, err := os.ReadFile(mdPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| library |") {
		t.Error("the Markdown report has no table")
	}
}

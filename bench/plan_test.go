package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestW1ProcsAutoLeavesALocalServerACore(t *testing.T) {
	for _, c := range []struct {
		in, addr string
		ncpu     int
		want     []int
	}{
		{"auto", "", 2, []int{0, 1}},
		{"auto", "127.0.0.1:6379", 8, []int{0, 7}},
		{"auto", "10.0.0.5:6379", 8, []int{0}}, // a remote server needs no core of ours
		{"auto", "", 1, []int{0}},
		{"0,1,1,2", "", 2, []int{0, 1, 2}},
	} {
		got, err := procsList(c.in, c.addr, c.ncpu)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("procsList(%q, %q, %d) = %v, %v; want %v", c.in, c.addr, c.ncpu, got, err, c.want)
		}
	}
	for _, bad := range []string{"-1", "one", ","} {
		if got, err := procsList(bad, "", 2); err == nil {
			t.Errorf("procsList(%q) = %v, want an error", bad, got)
		}
	}
}

func TestW1AndW2RunEveryLibraryAtEveryGOMAXPROCS(t *testing.T) {
	o, err := parseFlags([]string{"-workloads", "w1,w2", "-libs", "rueidis,ours", "-g", "64", "-procs", "0,1", "-variants=false"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range plan(o) {
		got = append(got, fmt.Sprintf("%s/%s/%d", describe(c), c.Library, c.Procs))
	}
	want := []string{
		"w1 ours G=64/ours/0", "w1 rueidis G=64/rueidis/0",
		"w1 ours G=64 GOMAXPROCS=1/ours/1", "w1 rueidis G=64 GOMAXPROCS=1/rueidis/1",
		"w2 ours G=64 keys=1/ours/0", "w2 rueidis G=64 keys=1/rueidis/0",
		"w2 ours G=64 keys=1 GOMAXPROCS=1/ours/1", "w2 rueidis G=64 keys=1 GOMAXPROCS=1/rueidis/1",
		"w2 ours G=64 keys=16/ours/0", "w2 rueidis G=64 keys=16/rueidis/0",
		"w2 ours G=64 keys=16 GOMAXPROCS=1/ours/1", "w2 rueidis G=64 keys=16 GOMAXPROCS=1/rueidis/1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("plan =\n%q\nwant\n%q", got, want)
	}
}

func TestSpreadShapesPlanEveryLibraryOnProcessesGoroutinesAndKeys(t *testing.T) {
	o, err := parseFlags([]string{"-workloads", "w2x,w4x", "-libs", "ours,redsync", "-w2x", "64x1,8X8/16",
		"-w4x", "4x1", "-cs-hold", "20us", "-variants=false"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range plan(o) {
		got = append(got, fmt.Sprintf("%s/%v", describe(c), c.CSHold))
	}
	want := []string{
		"w2x ours 64x1 keys=1/20µs", "w2x redsync 64x1 keys=1/20µs",
		"w2x ours 8x8 keys=16/20µs", "w2x redsync 8x8 keys=16/20µs",
		"w4x ours 4x1 keys=1/20µs", "w4x redsync 4x1 keys=1/20µs",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("plan =\n%q\nwant\n%q", got, want)
	}
	for _, bad := range [][]string{{"-w2x", "8"}, {"-w2x", "0x8"}, {"-w2x", "8x8/0"}, {"-w4x", "8x8/2"},
		{"-w4x", "1x1"}, {"-cs-hold", "-1us"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}

func TestScheduleRepeatsEveryCaseInRoundsWithTheLibrariesShuffled(t *testing.T) {
	o, err := parseFlags([]string{"-workloads", "w1,w2", "-libs", "ours,redsync,redislock,rueidis", "-g", "1,64",
		"-procs", "0", "-w2-keys", "1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cases := plan(o)
	order := schedule(cases, 5, 42)
	if len(order) != 5*len(cases) {
		t.Fatalf("%d runs for %d cases × 5", len(order), len(cases))
	}
	counts := make([]int, len(cases))
	firsts := map[string]bool{}
	for round := 0; round < 5; round++ {
		got := order[round*len(cases) : (round+1)*len(cases)]
		for j, i := range got {
			counts[i]++
			// Configurations keep the plan's order: a run's configuration is the plan's at that position.
			if !sameConfig(cases[i], cases[j]) {
				t.Fatalf("round %d position %d runs %s where the plan has %s", round, j, describe(cases[i]), describe(cases[j]))
			}
		}
		firsts[cases[got[0]].Library] = true
	}
	for i, n := range counts {
		if n != 5 {
			t.Errorf("%s runs %d times", describe(cases[i]), n)
		}
	}
	if len(firsts) < 2 {
		t.Errorf("the same library ran first in all 5 rounds: %v", firsts)
	}
	if !slices.Equal(order, schedule(cases, 5, 42)) {
		t.Error("the same seed gave another order")
	}
	if slices.Equal(order, schedule(cases, 5, 43)) {
		t.Error("another seed gave the same order")
	}
}

func TestVariantsRunNextToTheirLibraryWhereTheyTellSomething(t *testing.T) {
	o, err := parseFlags([]string{"-workloads", "w1,w2,w2x,w3", "-libs", "redsync,rueidis,rueidislock,ours", "-g", "64",
		"-w2-keys", "1", "-w2x", "8x8"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range plan(o) {
		got = append(got, describe(c))
	}
	want := []string{
		"w1 ours G=64", "w1 redsync G=64", "w1 rueidis G=64", "w1 rueidis:flush G=64", "w1 rueidislock G=64",
		"w2 ours G=64 keys=1", "w2 redsync G=64 keys=1", "w2 redsync:1ms G=64 keys=1", "w2 rueidis G=64 keys=1",
		"w2 rueidislock G=64 keys=1", "w2 rueidislock:20ms G=64 keys=1",
		"w2x ours 8x8 keys=1", "w2x fifo 8x8 keys=1", "w2x redsync 8x8 keys=1", "w2x redsync:1ms 8x8 keys=1",
		"w2x rueidis 8x8 keys=1", "w2x rueidislock 8x8 keys=1",
		"w3 ours N=10000", "w3 redsync N=10000", "w3 rueidis N=10000", "w3 rueidislock N=10000",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("plan =\n%q\nwant\n%q", got, want)
	}
}

func TestTraceDirReachesEveryCaseAndIsMadeBeforeAnyRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "traces")
	o, err := parseFlags([]string{"-workloads", "w1,w2x", "-libs", "ours,redsync", "-g", "1", "-w2x", "2x1",
		"-trace-dir", dir}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cases := plan(o)
	for _, c := range cases {
		if c.TraceDir != dir {
			t.Fatalf("case %s %s: TraceDir %q, want %q", c.Workload, c.Library, c.TraceDir, dir)
		}
	}
	if len(cases) == 0 {
		t.Fatal("no cases planned")
	}

	// A directory that cannot be made fails the run at once, naming the flag.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o.traceDir = filepath.Join(blocker, "traces")
	if _, err := orchestrate(context.Background(), o, newUI(io.Discard, "off", false)); err == nil ||
		!strings.Contains(err.Error(), "-trace-dir") {
		t.Fatalf("orchestrate with an unmakeable -trace-dir: %v; want an error naming the flag", err)
	}
}

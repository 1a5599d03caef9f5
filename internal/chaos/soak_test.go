package chaos

import (
	"strings"
	"testing"
)

// flatResult makes a run of 100 s: a server sample every second and a stat record of worker 0 every 2 s, whose
// goroutines and heap come from g and heap (given the time in seconds).
func flatResult(g func(s int64) int, heap func(s int64) uint64) *Result {
	res := &Result{Locks: 4, Workers: 6}
	for s := int64(0); s < 100; s++ {
		res.Samples = append(res.Samples, ServerSample{At: s * 1e9, Up: true, Keys: 6, Channels: 3, Clients: 20})
		if s%2 == 0 {
			res.Input.Records = append(res.Input.Records, Record{Kind: KindStat, Proc: 0, At: s * 1e9,
				Goroutines: g(s), HeapAlloc: heap(s)})
		}
	}
	return res
}

func TestFlatnessAcceptsAFlatRun(t *testing.T) {
	res := flatResult(func(int64) int { return 15 }, func(s int64) uint64 { return 400<<10 + uint64(s%7)<<10 })
	if f := Flatness(res); !f.OK() {
		t.Fatalf("a flat run judged not flat:\n%s", f)
	}
}

func TestFlatnessFindsGrowth(t *testing.T) {
	for name, tc := range map[string]struct {
		res  *Result
		want string
	}{
		"goroutines": {flatResult(func(s int64) int { return 15 + int(s/5) }, func(int64) uint64 { return 400 << 10 }), "goroutines grew"},
		"heap":       {flatResult(func(int64) int { return 15 }, func(s int64) uint64 { return uint64(s) * 40 << 10 }), "heap grew"},
	} {
		if f := Flatness(tc.res); f.OK() || !strings.Contains(f.String(), tc.want) {
			t.Errorf("%s: want %q, got:\n%s", name, tc.want, f)
		}
	}
	res := flatResult(func(int64) int { return 15 }, func(int64) uint64 { return 400 << 10 })
	res.Samples[50].Channels = 29 // one over 4 unlock channels and 4 × 6 grant channels
	res.Samples[60].Keys = 17     // one over 4 keys for each of 4 locks
	res.LeftoverKeys = []string{"chaos:lock:1"}
	f := Flatness(res)
	for _, want := range []string{"29 channels subscribed for 4 locks and 6 clients", "17 keys for 4 locks",
		"lock keys left"} {
		if !strings.Contains(f.String(), want) {
			t.Errorf("want %q in:\n%s", want, f)
		}
	}
}

// TestFlatnessAllowsTheQueue: a lock that processes wait for has its queue and deadline set beside it, and each
// waiting client its own grant channel; a run at those bounds is flat.
func TestFlatnessAllowsTheQueue(t *testing.T) {
	res := flatResult(func(int64) int { return 15 }, func(int64) uint64 { return 400 << 10 })
	res.Samples[50].Channels = 28
	res.Samples[60].Keys = 16
	if f := Flatness(res); !f.OK() {
		t.Fatalf("a run at the bounds (16 keys, 28 channels for 4 locks and 6 workers) judged not flat:\n%s", f)
	}
}

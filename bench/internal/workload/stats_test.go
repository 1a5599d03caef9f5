package workload

import (
	"math"
	"testing"
	"time"
)

func TestJainIsOneForEvenSharesAndOneOverNForOneWinner(t *testing.T) {
	cases := []struct {
		xs   []int64
		want float64
	}{
		{[]int64{5, 5, 5, 5}, 1},
		{[]int64{10, 0, 0, 0}, 0.25},
		{[]int64{1, 3}, 16.0 / 20.0}, // (1+3)^2 / (2*(1+9))
		{[]int64{}, 0},
		{[]int64{0, 0}, 0},
	}
	for _, c := range cases {
		if got := Jain(c.xs); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Jain(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

func TestMinMax(t *testing.T) {
	lo, hi := MinMax([]int64{4, -2, 9, 0})
	if lo != -2 || hi != 9 {
		t.Fatalf("MinMax = %d, %d; want -2, 9", lo, hi)
	}
	if lo, hi := MinMax(nil); lo != 0 || hi != 0 {
		t.Fatalf("MinMax(nil) = %d, %d", lo, hi)
	}
}

func TestCoresDividesCPUTimeByWallTime(t *testing.T) {
	if got := Cores(1500*time.Millisecond, time.Second); got != 1.5 {
		t.Fatalf("Cores = %v, want 1.5", got)
	}
	if got := Cores(time.Second, 0); got != 0 {
		t.Fatalf("Cores over an empty interval = %v, want 0", got)
	}
}

// TestProcessCPUGrowsWithWork spins until the process has used 20 ms more
// CPU (on a shared machine the wall time that takes is anybody's guess), with
// a generous bound in case ProcessCPU never moves.
func TestProcessCPUGrowsWithWork(t *testing.T) {
	before := ProcessCPU()
	deadline := time.Now().Add(30 * time.Second)
	x := 0
	for ProcessCPU()-before < 20*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("30 s of spinning added %v of CPU time (x=%d)", ProcessCPU()-before, x)
		}
		for range 10000 {
			x++
		}
	}
}

func TestLatenciesPercentilesOfAUniformDistribution(t *testing.T) {
	l := NewLatencies(4)
	// 1..10000 µs, once each, spread over the shards.
	for i := 1; i <= 10000; i++ {
		l.Record(i, time.Duration(i)*time.Microsecond)
	}
	l.Record(0, 250*time.Second) // beyond the trackable range: clamped, exact max kept
	var r Record
	l.Summarize(&r)
	if r.LatencyCount != 10001 {
		t.Fatalf("count = %d, want 10001", r.LatencyCount)
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want)/want > 0.002 { // 3 significant digits
			t.Errorf("%s = %v, want %v ±0.2%%", name, got, want)
		}
	}
	near("p50", r.P50us, 5000)
	near("p99", r.P99us, 9900)
	near("p99.9", r.P999us, 9990)
	if r.MaxUs != 250e6 {
		t.Errorf("max = %v µs, want the exact 250 s", r.MaxUs)
	}
	for i := 1; i < len(r.LatencyCDF); i++ {
		a, b := r.LatencyCDF[i-1], r.LatencyCDF[i]
		if b.Pct < a.Pct || b.Us < a.Us {
			t.Fatalf("CDF not monotonic at %d: %+v then %+v", i, a, b)
		}
	}
	if first := r.LatencyCDF[0]; first.Pct != 0 || first.Us != 1 {
		t.Errorf("CDF starts at %+v, want the minimum (1 µs) at 0%%", first)
	}
	var n int64
	prev := 0.0
	for _, b := range r.LatencyHistogram {
		n += b.Count
		if b.UpToUs <= prev {
			t.Fatalf("histogram bounds not increasing: %v after %v", b.UpToUs, prev)
		}
		prev = b.UpToUs
	}
	if n != r.LatencyCount {
		t.Fatalf("histogram holds %d values, want %d", n, r.LatencyCount)
	}
}

func TestLatenciesHistogramBinsAreQuarterOctaves(t *testing.T) {
	l := NewLatencies(1)
	l.Record(0, 100*time.Microsecond)
	l.Record(0, 1000*time.Microsecond)
	var r Record
	l.Summarize(&r)
	bars := r.LatencyHistogram
	if len(bars) < 2 || bars[0].Count != 1 || bars[len(bars)-1].Count != 1 {
		t.Fatalf("bars = %+v", bars)
	}
	// 100 µs falls in (2^(26/4), 2^(27/4)] = (90.5, 107.6]; 1000 in (861, 1024].
	if up := bars[0].UpToUs; up < 100 || up > 108 {
		t.Errorf("first bin ends at %v", up)
	}
	if up := bars[len(bars)-1].UpToUs; up < 1000 || up > 1025 {
		t.Errorf("last bin ends at %v", up)
	}
	for i := 1; i < len(bars); i++ {
		if ratio := bars[i].UpToUs / bars[i-1].UpToUs; math.Abs(ratio-math.Pow(2, 0.25)) > 1e-9 {
			t.Fatalf("bin %d grows by %v", i, ratio)
		}
	}
}

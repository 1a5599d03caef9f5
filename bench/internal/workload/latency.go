package workload

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histogram range: 1 µs to 100 s with 3 significant digits (0.1 %
// resolution). A longer latency is recorded as the maximum trackable value;
// the exact maximum is kept beside the histogram.
const (
	minTrackableUs = 1
	maxTrackableUs = 100_000_000
	sigFigs        = 3
)

// Latencies records operation latencies from many goroutines into a few HDR
// histograms (one per shard, each behind its own mutex: an HDR histogram is
// not safe for concurrent use, and one per goroutine would cost ~150 KB each
// at G = 1024, polluting the client heap the workloads report).
type Latencies struct {
	shards []latencyShard
}

type latencyShard struct {
	mu    sync.Mutex // guards the fields below
	h     *hdrhistogram.Histogram
	maxNs int64
	_     [40]byte // keeps neighbouring shards' mutexes off one cache line
}

// NewLatencies returns a recorder with n shards (at least 1).
func NewLatencies(n int) *Latencies {
	if n < 1 {
		n = 1
	}
	l := &Latencies{shards: make([]latencyShard, n)}
	for i := range l.shards {
		l.shards[i].h = hdrhistogram.New(minTrackableUs, maxTrackableUs, sigFigs)
	}
	return l
}

// Record adds one latency to shard i % shards. Safe for concurrent use.
func (l *Latencies) Record(i int, d time.Duration) {
	s := &l.shards[i%len(l.shards)]
	us := d.Microseconds()
	if us < minTrackableUs {
		us = minTrackableUs
	} else if us > maxTrackableUs {
		us = maxTrackableUs
	}
	s.mu.Lock()
	_ = s.h.RecordValue(us) // cannot fail: us is clamped to the trackable range
	if int64(d) > s.maxNs {
		s.maxNs = int64(d)
	}
	s.mu.Unlock()
}

// Merged returns one histogram with every shard's values and the exact
// maximum. Safe for concurrent use with Record.
func (l *Latencies) Merged() (*hdrhistogram.Histogram, time.Duration) {
	out := hdrhistogram.New(minTrackableUs, maxTrackableUs, sigFigs)
	var maxNs int64
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		out.Merge(s.h)
		if s.maxNs > maxNs {
			maxNs = s.maxNs
		}
		s.mu.Unlock()
	}
	return out, time.Duration(maxNs)
}

// cdfQuantiles are the percentiles exported as a CDF: dense in the tail,
// where lock latencies differ most.
var cdfQuantiles = []float64{
	0, 1, 5, 10, 20, 30, 40, 50, 60, 70, 75, 80, 85, 90, 92.5, 95, 97, 98, 99,
	99.5, 99.7, 99.9, 99.95, 99.99, 99.999, 100,
}

// Summarize fills r's latency fields (percentiles, exact maximum, CDF and a
// log-spaced histogram) from the recorded latencies.
func (l *Latencies) Summarize(r *Record) {
	h, maxD := l.Merged()
	r.LatencyCount = h.TotalCount()
	if r.LatencyCount == 0 {
		return
	}
	r.P50us = float64(h.ValueAtQuantile(50))
	r.P99us = float64(h.ValueAtQuantile(99))
	r.P999us = float64(h.ValueAtQuantile(99.9))
	r.MaxUs = float64(maxD.Nanoseconds()) / 1e3
	r.LatencyCDF = r.LatencyCDF[:0]
	for _, q := range cdfQuantiles {
		v := float64(h.ValueAtQuantile(q))
		switch q {
		case 0:
			v = float64(h.Min()) // ValueAtQuantile(0) is 0, which a log axis cannot show
		case 100:
			v = r.MaxUs
		}
		r.LatencyCDF = append(r.LatencyCDF, Point{Us: v, Pct: q})
	}
	r.LatencyHistogram = logHistogram(h)
}

// logHistogram buckets h into bins whose upper bounds grow by 2^(1/4) (four
// per octave, so each bin is ~19 % wider than the previous) from the smallest
// to the largest recorded value; empty bins inside that range are kept so
// that the bars share one axis across libraries.
func logHistogram(h *hdrhistogram.Histogram) []Bar {
	counts := map[int]int64{}
	first, last := math.MaxInt, math.MinInt
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		k := binOf(float64(b.To))
		counts[k] += b.Count
		first, last = min(first, k), max(last, k)
	}
	if first > last {
		return nil
	}
	bars := make([]Bar, 0, last-first+1)
	for k := first; k <= last; k++ {
		bars = append(bars, Bar{UpToUs: binUpperUs(k), Count: counts[k]})
	}
	return bars
}

// binOf returns the index k of the smallest bin bound 2^(k/4) ≥ us.
func binOf(us float64) int {
	if us <= 1 {
		return 0
	}
	k := int(math.Ceil(4 * math.Log2(us)))
	// Guard against rounding putting a value just above its bound.
	for binUpperUs(k) < us {
		k++
	}
	return k
}

// binUpperUs is the upper bound, in microseconds, of bin k.
func binUpperUs(k int) float64 { return math.Pow(2, float64(k)/4) }

// SparseHistogram is a Latencies' content in a form a case process can send
// to the orchestrator: the non-empty buckets of the merged HDR histogram
// (bucket index, count) and the exact maximum.
type SparseHistogram struct {
	Buckets [][2]int64 `json:"buckets"`
	MaxNs   int64      `json:"max_ns"`
}

// Export returns every recorded latency in sparse form. Safe for concurrent
// use with Record.
func (l *Latencies) Export() SparseHistogram {
	h, maxD := l.Merged()
	out := SparseHistogram{MaxNs: int64(maxD)}
	for i, n := range h.Export().Counts {
		if n != 0 {
			out.Buckets = append(out.Buckets, [2]int64{int64(i), n})
		}
	}
	return out
}

// Add records the latencies of s (exported by another Latencies) in shard
// 0. It fails on a bucket index outside this histogram's range.
func (l *Latencies) Add(s SparseHistogram) error {
	snap := hdrhistogram.New(minTrackableUs, maxTrackableUs, sigFigs).Export()
	for _, b := range s.Buckets {
		if b[0] < 0 || b[0] >= int64(len(snap.Counts)) || b[1] < 0 {
			return fmt.Errorf("workload: latency bucket %d (count %d) outside the histogram", b[0], b[1])
		}
		snap.Counts[b[0]] += b[1]
	}
	sh := &l.shards[0]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.h.Merge(hdrhistogram.Import(snap))
	sh.maxNs = max(sh.maxNs, s.MaxNs)
	return nil
}

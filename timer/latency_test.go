package timer

import (
	"math"
	"slices"
)

// latencyHist keeps a test's lateness values exactly, for percentiles: a run records at most a few million
// values, sorted once when read, so the module needs no histogram package. Not safe for concurrent use.
type latencyHist struct {
	v      []int64
	sorted bool
}

func newLatencyHist() *latencyHist { return &latencyHist{} }

func (h *latencyHist) RecordValue(v int64) { h.v = append(h.v, v); h.sorted = false }

// ValueAtQuantile returns the smallest recorded value at or above q percent of the values (0 when empty).
func (h *latencyHist) ValueAtQuantile(q float64) int64 {
	if len(h.v) == 0 {
		return 0
	}
	if !h.sorted {
		slices.Sort(h.v)
		h.sorted = true
	}
	i := int(math.Ceil(q/100*float64(len(h.v)))) - 1
	return h.v[min(max(i, 0), len(h.v)-1)]
}

func (h *latencyHist) Max() int64 { return h.ValueAtQuantile(100) }

package report

import (
	"slices"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

// Aggregate combines the repeated runs of one case into the record the
// tables show. The headline rate is the median of the runs, with its min–max
// spread and every run's value; the latency percentiles are each the median
// of the runs'; the other figures (CPU, commands, fairness, charts) are
// those of the median run by rate, so that they stay consistent with each
// other. Whatever must not hide in a median is taken over every run:
// violations, lost locks, errors and abandoned workers are summed, stalled
// operations and waiters over 1 s are the worst run's, and the record is
// disturbed when any run was. A case that was not applicable in any run is
// reported as such.
func Aggregate(runs []workload.Record) workload.Record {
	if len(runs) == 0 {
		return workload.Record{}
	}
	var ok []workload.Record
	for _, r := range runs {
		if r.NotApplicable != "" {
			na := r
			na.Repeats = len(runs)
			return na
		}
		ok = append(ok, r)
	}
	byRate := slices.Clone(ok)
	slices.SortStableFunc(byRate, func(a, b workload.Record) int {
		switch {
		case a.OpsPerSec < b.OpsPerSec:
			return -1
		case a.OpsPerSec > b.OpsPerSec:
			return 1
		}
		return 0
	})
	out := byRate[(len(byRate)-1)/2]
	out.Notes = nil
	out.Repeats = len(runs)
	rates := make([]float64, len(ok))
	for i, r := range ok {
		rates[i] = r.OpsPerSec
	}
	out.OpsPerSecRuns = rates
	out.OpsPerSec = median(rates)
	out.OpsPerSecMin, out.OpsPerSecMax = slices.Min(rates), slices.Max(rates)
	out.P50us = medianOf(ok, func(r workload.Record) float64 { return r.P50us })
	out.P99us = medianOf(ok, func(r workload.Record) float64 { return r.P99us })
	out.P999us = medianOf(ok, func(r workload.Record) float64 { return r.P999us })
	out.MaxUs = medianOf(ok, func(r workload.Record) float64 { return r.MaxUs })
	out.Violations, out.MarkerViolations, out.Lost, out.LostLib, out.LostServer = 0, 0, 0, 0, 0
	out.Errors, out.Abandoned, out.Attempts = 0, 0, 0
	out.ErrorSample = ""
	out.Disturbed = false
	for _, r := range ok {
		out.Violations += r.Violations
		out.MarkerViolations += r.MarkerViolations
		out.Lost += r.Lost
		out.LostLib += r.LostLib
		out.LostServer += r.LostServer
		out.Errors += r.Errors
		out.Abandoned += r.Abandoned
		out.Attempts += r.Attempts
		out.Disturbed = out.Disturbed || r.Disturbed
		if out.ErrorSample == "" {
			out.ErrorSample = r.ErrorSample
		}
		if r.Stalled > out.Stalled {
			out.Stalled = r.Stalled
		}
		out.StalledOldestMs = max(out.StalledOldestMs, r.StalledOldestMs)
		if r.Waiting > out.Waiting {
			out.Waiting = r.Waiting
		}
		out.WaitingOldestMs = max(out.WaitingOldestMs, r.WaitingOldestMs)
		for _, n := range r.Notes {
			if !slices.Contains(out.Notes, n) {
				out.Notes = append(out.Notes, n)
			}
		}
	}
	return out
}

func medianOf(rs []workload.Record, f func(workload.Record) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return median(xs)
}

// median of xs (the mean of the two middle values for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

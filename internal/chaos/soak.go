package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Flat is the soak's resource verdict: whether the workers' goroutines and heap, and the server's keys, channels
// and clients, stayed flat over a long run, with the figures behind it.
type Flat struct {
	Lines    []string // one line per figure, for the report
	Problems []string // what grew; empty when everything stayed flat
}

// OK reports whether nothing grew.
func (f *Flat) OK() bool { return len(f.Problems) == 0 }

func (f *Flat) String() string {
	var sb strings.Builder
	for _, l := range f.Lines {
		sb.WriteString(l + "\n")
	}
	for _, p := range f.Problems {
		sb.WriteString("NOT FLAT: " + p + "\n")
	}
	return sb.String()
}

// Flatness compares the second quarter of the run with the last quarter. Each worker that lived through both is
// compared with itself (stat records: goroutines and live heap after a GC): the last quarter's median may exceed
// the second quarter's by at most 5 goroutines and by 25% + 256 KiB of heap. At every sample the server must hold
// at most keysPerLock keys per lock of the run (Result.Locks), and subscribe at most one channel per lock and one
// more per lock and worker alive at once (Result.Workers, one Client each: maxChannels). Its client count must not
// drift up by more than 20% (faults kill and replace workers, so it moves around). At the end no lock key and no
// channel may be left (Result.LeftoverKeys, Result.ChannelsAfter). Warm-up (the first quarter) is left out: pools,
// the timer wheel and the decoder buffers grow to their working size there.
func Flatness(res *Result) *Flat {
	f := &Flat{}
	stats := map[int][]Record{}
	for _, r := range res.Input.Records {
		if r.Kind == KindStat {
			stats[r.Proc] = append(stats[r.Proc], r)
		}
	}
	var start, end int64
	for _, s := range res.Samples {
		if start == 0 || s.At < start {
			start = s.At
		}
		end = max(end, s.At)
	}
	if end <= start {
		f.Problems = append(f.Problems, "no server samples: the run was too short to judge")
		return f
	}
	q := (end - start) / 4
	q2 := func(t int64) bool { return t >= start+q && t < start+2*q }
	q4 := func(t int64) bool { return t >= start+3*q }

	compared := 0
	var worstG, worstH string
	var worstGrow int
	var worstHeap float64
	for proc, rs := range stats {
		var g2, g4 []int
		var h2, h4 []uint64
		for _, r := range rs {
			if q2(r.At) {
				g2, h2 = append(g2, r.Goroutines), append(h2, r.HeapAlloc)
			}
			if q4(r.At) {
				g4, h4 = append(g4, r.Goroutines), append(h4, r.HeapAlloc)
			}
		}
		if len(g2) == 0 || len(g4) == 0 {
			continue // started late or killed early
		}
		compared++
		mg2, mg4, mh2, mh4 := median(g2), median(g4), median(h2), median(h4)
		if d := mg4 - mg2; d > worstGrow || worstG == "" {
			worstGrow, worstG = d, fmt.Sprintf("worker %d goroutines %d -> %d", proc, mg2, mg4)
		}
		if r := float64(mh4) / float64(max(mh2, 1)); r > worstHeap {
			worstHeap, worstH = r, fmt.Sprintf("worker %d heap %d KiB -> %d KiB", proc, mh2>>10, mh4>>10)
		}
		if mg4 > mg2+5 {
			f.Problems = append(f.Problems, fmt.Sprintf("worker %d goroutines grew from %d to %d", proc, mg2, mg4))
		}
		if float64(mh4) > 1.25*float64(mh2)+256<<10 {
			f.Problems = append(f.Problems, fmt.Sprintf("worker %d heap grew from %d KiB to %d KiB", proc, mh2>>10, mh4>>10))
		}
	}
	f.Lines = append(f.Lines, fmt.Sprintf("workers compared (alive in both the 2nd and 4th quarter): %d; largest changes: %s; %s",
		compared, worstG, worstH))
	if compared == 0 {
		f.Problems = append(f.Problems, "no worker lived through the run: nothing to compare")
	}

	var c2, c4 []int64
	delayed := int64(0)
	for _, s := range res.Samples {
		if !s.Up {
			continue
		}
		delayed = max(delayed, s.AOFDelayedFsync)
		if q2(s.At) {
			c2 = append(c2, s.Clients)
		}
		if q4(s.At) {
			c4 = append(c4, s.Clients)
		}
	}
	maxKeys, maxCh := peaks(res)
	f.Lines = append(f.Lines, fmt.Sprintf("server: max keys %d (bound %d), max channels %d (bound %d), aof_delayed_fsync up to %d",
		maxKeys, keysPerLock*res.Locks, maxCh, maxChannels(res.Locks, res.Workers), delayed))
	f.Problems = append(f.Problems, OverBounds(res)...)
	if len(c2) > 0 && len(c4) > 0 {
		m2, m4 := median(c2), median(c4)
		f.Lines = append(f.Lines, fmt.Sprintf("server clients (median): %d in the 2nd quarter, %d in the 4th", m2, m4))
		if float64(m4) > 1.2*float64(m2)+2 {
			f.Problems = append(f.Problems, fmt.Sprintf("server clients grew from %d to %d", m2, m4))
		}
	}
	f.Lines = append(f.Lines, fmt.Sprintf("after the run: %d lock keys, %d channels left", len(res.LeftoverKeys), len(res.ChannelsAfter)))
	if len(res.LeftoverKeys) > 0 {
		f.Problems = append(f.Problems, fmt.Sprintf("lock keys left: %v", res.LeftoverKeys))
	}
	if len(res.ChannelsAfter) > 0 {
		f.Problems = append(f.Problems, fmt.Sprintf("channels left: %v", res.ChannelsAfter))
	}
	return f
}

// OverBounds says where the server held more keys, or had more channels subscribed, than the run's locks and
// workers account for at any sample (keysPerLock, maxChannels): what a key or subscription that leaks under faults
// shows first. It is empty when every sample was within the bounds.
func OverBounds(res *Result) []string {
	maxKeys, maxCh := peaks(res)
	var problems []string
	if maxKeys > int64(keysPerLock*res.Locks) {
		problems = append(problems, fmt.Sprintf("server held %d keys for %d locks", maxKeys, res.Locks))
	}
	if maxCh > maxChannels(res.Locks, res.Workers) {
		problems = append(problems, fmt.Sprintf("server had %d channels subscribed for %d locks and %d clients",
			maxCh, res.Locks, res.Workers))
	}
	return problems
}

// peaks returns the most keys the server held and the most channels it had subscribed at any sample taken while it
// was up.
func peaks(res *Result) (keys int64, channels int) {
	for _, s := range res.Samples {
		if s.Up {
			keys, channels = max(keys, s.Keys), max(channels, s.Channels)
		}
	}
	return keys, channels
}

// keysPerLock is how many keys one lock name of a chaos run may take on the server: the lock itself, the fenced
// lock's token key, and the queue of waiters with its deadline set, which rlock keeps beside the lock while
// processes wait for it.
const keysPerLock = 4

// maxChannels is how many channels the server may have subscribed for locks lock names and clients Clients waiting
// on them: each lock's unlock channel (Redisson's, shared by every client), and each client's own grant channel for
// each lock it waits on, on which the release that hands it the lock tells it so. A channel is subscribed while
// the client has waiters on it, so the count stays within this bound however long the run.
func maxChannels(locks, clients int) int { return locks * (1 + clients) }

func median[T int | int64 | uint64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// RunDuration is the time between the first and the last server sample, for reports.
func (r *Result) RunDuration() time.Duration {
	if len(r.Samples) < 2 {
		return 0
	}
	return time.Duration(r.Samples[len(r.Samples)-1].At - r.Samples[0].At)
}

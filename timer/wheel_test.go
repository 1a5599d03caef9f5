package timer

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestFarTimeoutsCascadeIntoTheWheelAndRunOnTime(t *testing.T) {
	const wheel = 4 // rotation 4 ticks, far rotation 16: delays up to 300 ticks cross far rounds
	tm, c := newManualTimer(t, Config{Tick: testTick, WheelSize: wheel})
	defer stopTimer(t, tm)
	rng := rand.New(rand.NewPCG(10, 11))
	var probes []*probe
	for range 100 {
		for range 3 {
			d := time.Duration(rng.Int64N(int64(300 * testTick)))
			p := newProbe(c, d)
			c.schedule(t, tm, p, d)
			probes = append(probes, p)
		}
		if rng.IntN(4) == 0 {
			c.step(t, time.Duration(rng.Int64N(int64(3*testTick)))) // off the tick grid
		}
		c.step(t, testTick)
	}
	for range 320 {
		c.step(t, testTick)
	}
	for i, p := range probes {
		late := time.Duration(p.ranAt.Load() - p.deadline)
		if p.runs.Load() != 1 || late <= 0 || late > 4*testTick {
			t.Fatalf("probe %d: runs %d, lateness %v; want one run, never early, at most a tick plus a clock step",
				i, p.runs.Load(), late)
		}
	}
	if n := bucketed(tm); n != 1 {
		t.Fatalf("%d timeouts left in the wheel, want the sentinel", n)
	}
}

func TestNextSetFindsTheFirstOccupiedBucketAcrossTheWrap(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, size := range []int{1, 2, 8, 64, 128, 1024} {
		tm := New(Config{WheelSize: size})
		tm.occupied = make([]uint64, (2*size+63)/64)
		for range 200 {
			clear(tm.occupied)
			set := map[int64]bool{} // bucket indexes, both levels
			for range rng.IntN(6) {
				i := rng.Int64N(int64(2 * size))
				set[i] = true
				tm.occupied[i>>6] |= 1 << (i & 63)
			}
			for _, base := range []int64{0, int64(size)} {
				from := rng.Int64N(1 << 40)
				want := int64(-1)
				for k := int64(0); k < int64(size); k++ {
					if set[base+(from+k)&tm.mask] {
						want = from + k
						break
					}
				}
				if got := tm.nextSet(base, from); got != want {
					t.Fatalf("size %d, occupied %v, level %d, from %d: nextSet = %d, want %d", size, set, base, from, got, want)
				}
			}
		}
	}
}

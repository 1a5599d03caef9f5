package conn

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/resp"
)

// The backoff never exceeds its cap, never falls below half the current step, and is 0 only for the first attempt.
func TestBackoffIsJitteredExponentialAndCapped(t *testing.T) {
	cfg := &Config{ReconnectMinBackoff: 10 * time.Millisecond, ReconnectMaxBackoff: 300 * time.Millisecond}
	if d := backoff(cfg, 0); d != 0 {
		t.Fatalf("backoff(0) = %v; want 0 (first attempt at once)", d)
	}
	for failures := 1; failures < 80; failures++ {
		step := cfg.ReconnectMaxBackoff
		if failures-1 < 30 && cfg.ReconnectMinBackoff<<(failures-1) < step {
			step = cfg.ReconnectMinBackoff << (failures - 1)
		}
		seen := map[time.Duration]bool{}
		for range 50 {
			d := backoff(cfg, failures)
			if d < step/2 || d > step {
				t.Fatalf("backoff(%d) = %v; want within [%v, %v]", failures, d, step/2, step)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Fatalf("backoff(%d) is not jittered: always %v", failures, seen)
		}
	}
}

// The script log returns exactly the bytes logged at a position while later entries are added and earlier ones
// consumed, across compactions.
func TestScriptLogKeepsBytesUntilConsumed(t *testing.T) {
	var l scriptLog
	type entry struct {
		pos  uint64
		data []byte
	}
	var live []entry
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		if len(live) == 0 || rng.IntN(3) > 0 {
			data := bytes.Repeat([]byte{byte(i)}, 1+rng.IntN(300))
			live = append(live, entry{l.add(data), data})
		} else {
			k := 1 + rng.IntN(len(live))
			last := live[k-1]
			l.consume(last.pos + uint64(len(last.data)))
			live = live[k:]
		}
		for _, e := range live {
			if got := l.bytes(e.pos, len(e.data)); !bytes.Equal(got, e.data) {
				t.Fatalf("step %d: bytes at %d changed", i, e.pos)
			}
		}
	}
}

func TestFifoKeepsOrderAcrossGrowth(t *testing.T) {
	var q fifo
	next, want := 0, 0
	var out []pending
	for round := range 200 {
		for range round % 37 {
			q.push(pending{tries: uint8(next)})
			next++
		}
		k := min(q.n, round%23)
		out = q.popInto(out[:0], k)
		for _, e := range out {
			if e.tries != uint8(want) {
				t.Fatalf("popped %d; want %d", e.tries, uint8(want))
			}
			want++
		}
	}
}

func TestCheckIntervalBounds(t *testing.T) {
	for _, tc := range []struct {
		rt, ping, want time.Duration
	}{
		{3 * time.Second, 10 * time.Second, 750 * time.Millisecond},
		{100 * time.Millisecond, 40 * time.Millisecond, 10 * time.Millisecond},
		{time.Millisecond, -1, 5 * time.Millisecond},
		{time.Minute, time.Hour, time.Second},
	} {
		if got := checkInterval(&Config{ResponseTimeout: tc.rt, PingInterval: tc.ping}); got != tc.want {
			t.Errorf("checkInterval(%v, %v) = %v; want %v", tc.rt, tc.ping, got, tc.want)
		}
	}
}

// The encoder's fast paths produce exactly what resp's encoder produces.
func TestAppendCmdMatchesResp(t *testing.T) {
	s := NewScript("return 1")
	long := string(bytes.Repeat([]byte("x"), 1234))
	for _, tc := range []struct{ keys, args []string }{
		{nil, nil},
		{[]string{"k"}, []string{"30000", "uuid:1"}},
		{[]string{"", "a-key-of-exactly-ten"[:10]}, []string{long, "99-chars-or-so"}},
		{make([]string, 12), make([]string, 95)},
	} {
		want := resp.AppendArrayLen(nil, 3+len(tc.keys)+len(tc.args))
		want = resp.AppendBulkString(want, "EVALSHA")
		want = resp.AppendBulkString(want, s.SHA())
		want = resp.AppendBulkInt(want, int64(len(tc.keys)))
		for _, k := range tc.keys {
			want = resp.AppendBulkString(want, k)
		}
		for _, a := range tc.args {
			want = resp.AppendBulkString(want, a)
		}
		if got := appendCmd(nil, s, tc.keys, tc.args); !bytes.Equal(got, want) {
			t.Fatalf("appendCmd(%d keys, %d args) =\n%q\nwant\n%q", len(tc.keys), len(tc.args), got, want)
		}
	}
}

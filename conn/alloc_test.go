package conn_test

import (
	"context"
	"testing"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// A standalone command with a context that cannot end costs one allocation, its promise: the caller's keys and
// variadic arguments stay on its stack, and nothing else is allocated to send it, read its reply and complete it.
// A change that makes them escape (passing them through an interface call, storing them) fails here.
func TestStandaloneEvalAllocatesOnlyItsPromise(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what escapes")
	}
	srv := redistest.Start(t)
	for _, lane := range []bool{true, false} {
		c := newClient(t, conn.Config{Addr: srv.Addr(), DisableLatencyLane: !lane})
		ctx := context.Background()
		keys, relKeys := []string{"alloc"}, []string{"alloc", "ch:alloc"}
		pair := func() {
			if _, err := c.Eval(ctx, benchAcquire, keys, "30000", "owner:1").Get(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Eval(ctx, benchRelease, relKeys, "0", "30000", "owner:1").Get(ctx); err != nil {
				t.Fatal(err)
			}
		}
		pair() // loads the scripts and grows the buffers
		if n := testing.AllocsPerRun(200, pair); n > 2 {
			t.Errorf("latency lane %t: %.1f allocations per acquire/release pair, want 2 (one promise each)", lane, n)
		}
	}
}

package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/faultproxy"
	"github.com/locksmith-go/locksmith/rlock"
)

// A first hold whose outcome was unknown, tried again at once. The owner came with the call (a held context of
// another lock), so the attempt that follows shares it: the client's release of the grant the lost attempt may
// have made expects the owner's only hold, and the retry's grant would be that hold. The release must run on the
// server before the retry's attempt, or it can take the retry's grant and leave its caller believing it holds a
// lock nobody holds.
func TestLostFirstHoldRetriedAtOnceKeepsTheRetrysHold(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault faultproxy.Direction // withheld for good: the attempt never runs (Upstream), or runs unanswered
		ran   bool
	}{
		{"the lost attempt never ran", faultproxy.Upstream, false},
		{"the lost attempt ran unanswered", faultproxy.Downstream, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReentryRig(t, false, rlock.Config{})
			mon := startMonitor(t, r.srv)
			nested := r.c.Lock("nested")
			owner := mustOwner(t, r.held)

			r.px.Withhold(tc.fault)
			_, err := nested.Lock(r.held) // its connection is reset at the response timeout
			r.px.Restore()
			wantUnknownReleasing(t, err)
			again, err := nested.Lock(r.held)
			if err != nil {
				t.Fatalf("Lock after the unknown outcome: %v", err)
			}

			// On the server, the lost grant's release came before the retry's acquire.
			wantAcquires := 1
			if tc.ran {
				wantAcquires = 2
			}
			ops := awaitScriptCalls(t, mon, "nested", owner, wantAcquires)
			if last := ops[len(ops)-1]; last != "acquire" || !slices.Contains(ops[:len(ops)-1], "release") {
				t.Fatalf("scripts run for the owner on the server, in order: %v; want the lost grant's release "+
					"before the retry's acquire", ops)
			}

			if got := hgetall(t, r.srv, "nested"); len(got) != 1 || got[owner] != "1" {
				t.Fatalf("server after the retry: %v, want only %s holding once", got, owner)
			}
			if n, err := nested.HoldCount(again); n != 1 || err != nil {
				t.Fatalf("HoldCount = %d, %v; want 1", n, err)
			}
			mustUnlock(t, nested, again)
			if got := hgetall(t, r.srv, "nested"); len(got) != 0 {
				t.Fatalf("server after the Unlock: %v, want nothing", got)
			}
			if cause := context.Cause(again); !errors.Is(cause, rlock.ErrReleased) {
				t.Fatalf("held context after the Unlock: cause %v, want ErrReleased", cause)
			}
			want := int64(0)
			if tc.ran {
				want = 1
			}
			if s := r.c.Stats(); s.OrphansReleased != want || s.OrphansExpired != 0 || s.Held != 1 {
				t.Fatalf("Stats = %+v, want OrphansReleased %d, none expired, only the outer lock held", s, want)
			}
		})
	}
}

// awaitScriptCalls waits until mon saw acquires acquire scripts of lock by owner, and returns the plain lock's
// scripts run for owner on lock so far, in order ("acquire", "release"; other scripts are left out).
func awaitScriptCalls(t *testing.T, mon *monitored, lock, owner string, acquires int) []string {
	t.Helper()
	acquire, _ := rlock.LookupScript(rlock.ScriptLockAcquire)
	release, _ := rlock.LookupScript(rlock.ScriptLockRelease)
	var ops []string
	eventuallyShowing(t, 5*time.Second, fmt.Sprintf("%d acquires of %s by the owner", acquires, lock), func() bool {
		ops = ops[:0]
		n := 0
		mon.mu.Lock()
		defer mon.mu.Unlock()
		for _, c := range mon.cmds {
			// EVALSHA sha 4 lock queue deadlines channel ARGV...: the acquire's owner is ARGV[2], the release's ARGV[1].
			if len(c) < 9 || !strings.EqualFold(c[0], "EVALSHA") || c[3] != lock {
				continue
			}
			switch {
			case c[1] == acquire.SHA1 && c[8] == owner:
				ops = append(ops, "acquire")
				n++
			case c[1] == release.SHA1 && c[7] == owner:
				ops = append(ops, "release")
			}
		}
		return n >= acquires
	}, func() string { return strings.Join(ops, ", ") })
	return ops
}

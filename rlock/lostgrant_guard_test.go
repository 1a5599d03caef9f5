package rlock

import (
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// A lost re-entry grant's release whose grant the hold's count no longer includes (the count the client records
// is only the callers' holds) must not begin as the owner's last release: it expects the callers' holds plus the
// grant, leaves the count and the hold as they are, and so can release only a grant that was made.
func TestLostGrantReleaseNeverBeginsAsTheLastRelease(t *testing.T) {
	c := relayClient(t, redistest.Start(t), nil)
	sh := c.shard("guard")
	h := &hold{c: c, name: "guard", owner: "o", kind: kindPlain, count: 1, lease: 30 * time.Second}
	op := &unlockOp{c: c, sh: sh, kind: kindPlain, owner: "o", name: "guard", from: expectLostGrantUnsent}
	sh.mu.Lock()
	op.beginLocked(h)
	sh.mu.Unlock()
	if op.final || op.expect != 2 || op.h != h || h.count != 1 || h.state != holdHeld || h.releasing != op {
		t.Fatalf("began with final %v, expect %d, count %d, state %v, releasing %v; want a release of the grant "+
			"expecting 2 that leaves the one hold held", op.final, op.expect, h.count, h.state, h.releasing == op)
	}
}

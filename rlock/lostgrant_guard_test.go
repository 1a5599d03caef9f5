package rlock

import (
	"context"
	"errors"
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

// A lost first hold's release (the owner holds nothing here) expects the owner's only hold. While a call of the
// owner waits in the lock's queue, a release of another client may hand that call the lock, and the lost grant's
// release could not tell the two apart: it is not sent, and the owner's attempts, which waited for it, go on.
func TestLostFirstHoldReleaseIsNotSentWhileACallOfTheOwnerIsQueued(t *testing.T) {
	c := relayClient(t, redistest.Start(t), nil)
	for _, queued := range []bool{false, true} {
		sh := c.shard("guard")
		if queued {
			lc := &lockCall{owner: "o"}
			lc.call = lc
			q := &queue{c: c, sh: sh, key: channelName("guard"), lockName: "guard"}
			q.head, q.tail, q.n = &lc.waiter, &lc.waiter, 1
			sh.mu.Lock()
			sh.lockQueues["guard"] = q
			sh.mu.Unlock()
			t.Cleanup(func() {
				sh.mu.Lock()
				delete(sh.lockQueues, "guard")
				sh.mu.Unlock()
			})
		}
		op := &unlockOp{c: c, sh: sh, kind: kindPlain, owner: "o", name: "guard", from: expectLostGrantUnsent,
			unheld: true}
		key := holdKey{"guard", "o"}
		sh.mu.Lock()
		op.beginLocked(nil)
		lost := sh.serial[key] != nil && sh.serial[key].lost == op
		sh.mu.Unlock()
		if op.expect != 1 || !lost || op.unsent != queued {
			t.Fatalf("queued call %v: began expecting %d, in flight for the owner's attempts %v, unsent %v", queued,
				op.expect, lost, op.unsent)
		}
		op.send()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := op.p.Future().Get(ctx)
		cancel()
		// Sent, it finds the owner holding nothing on the server (the grant was not made); not sent, it ends as
		// a grant not made without an answer.
		if sent := errors.Is(err, ErrNotHeld); sent == queued || (!sent && err != nil) {
			t.Fatalf("queued call %v: the lost grant's release: %v", queued, err)
		}
		sh.mu.Lock()
		left := sh.serial[key]
		sh.mu.Unlock()
		if left != nil {
			t.Fatalf("queued call %v: the owner's attempts still wait (%+v)", queued, *left)
		}
	}
}

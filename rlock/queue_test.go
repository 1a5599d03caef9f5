package rlock

import (
	"testing"

	"github.com/locksmith-go/locksmith/conn"
)

// famStubRun records attempts instead of sending them.
type famStubRun struct{ attempts int }

func (r *famStubRun) attempt()   { r.attempts++ }
func (r *famStubRun) fail(error) {}
func (r *famStubRun) expire()    {}

// famTestChannel builds a channel whose waiters need the given permits, all idle except those marked busy.
func famTestChannel(policy famWake, needs []int64, busy map[int]bool) (*famChannel, []*famWait) {
	f := &family{chans: map[string]*famChannel{}, waits: map[*famWait]struct{}{}}
	ws := make([]*famWait, len(needs))
	for i, n := range needs {
		ws[i] = &famWait{f: f, run: &famStubRun{}, chName: "ch", policy: policy, need: n, state: fwIdle}
		if busy[i] {
			ws[i].state = fwAttempting
		}
		f.joinLocked(ws[i])
	}
	return f.chans["ch"], ws
}

// woken returns the waiters that were sent an attempt, and those told to attempt again.
func woken(ws []*famWait) (idle []int, again []int) {
	for i, w := range ws {
		if w.run.(*famStubRun).attempts > 0 {
			idle = append(idle, i)
		}
		if w.again {
			again = append(again, i)
		}
	}
	return idle, again
}

func TestWakeOnALockChannelWakesOnlyTheFirstWaiter(t *testing.T) {
	ch, ws := famTestChannel(wakeHead, []int64{1, 1, 1}, nil)
	ch.onMessage(conn.Message{Kind: conn.KindMessage, Payload: "0"})
	if idle, _ := woken(ws); len(idle) != 1 || idle[0] != 0 {
		t.Fatalf("woken %v, want [0]", idle)
	}
	// A head whose attempt is in flight is told to attempt again instead; nobody else moves.
	ch, ws = famTestChannel(wakeHead, []int64{1, 1}, map[int]bool{0: true})
	ch.onMessage(conn.Message{Kind: conn.KindMessage, Payload: "0"})
	if idle, again := woken(ws); len(again) != 1 || again[0] != 0 || len(idle) != 0 {
		t.Fatalf("again %v, woken %v", again, idle)
	}
	if ws[1].state != fwIdle {
		t.Fatal("the second waiter was woken")
	}
}

func TestWakeOnASemaphoreChannelWakesWhomThePublishedPermitsCover(t *testing.T) {
	ch, ws := famTestChannel(wakePermits, []int64{2, 1, 3, 1}, nil)
	ch.onMessage(conn.Message{Kind: conn.KindMessage, Payload: "3"})
	// 2 + 1 cover the first two; the third needs 3 more: stop there (queue order is kept).
	if idle, _ := woken(ws); len(idle) != 2 || idle[0] != 0 || idle[1] != 1 {
		t.Fatalf("woken %v, want [0 1]", idle)
	}
	ch, ws = famTestChannel(wakePermits, []int64{1, 1}, nil)
	ch.onMessage(conn.Message{Kind: conn.KindMessage, Payload: "0"})
	if idle, _ := woken(ws); len(idle) != 0 {
		t.Fatalf("no permits published, but %v woken", idle)
	}
	// An unreadable payload wakes everyone (they re-check).
	ch, ws = famTestChannel(wakePermits, []int64{5, 5}, nil)
	ch.onMessage(conn.Message{Kind: conn.KindMessage, Payload: "?"})
	if idle, _ := woken(ws); len(idle) != 2 {
		t.Fatalf("woken %v, want all", idle)
	}
}

func TestWakeOnAReadWriteChannelWakesAllOnAWriteUnlockAndOneOtherwise(t *testing.T) {
	ch, ws := famTestChannel(wakeRW, []int64{1, 1, 1}, nil)
	ch.onMessage(conn.Message{Kind: conn.KindMessage, Payload: "1"})
	if idle, _ := woken(ws); len(idle) != 3 {
		t.Fatalf("write unlock woke %v, want all", idle)
	}
	ch, ws = famTestChannel(wakeRW, []int64{1, 1, 1}, nil)
	ch.onMessage(conn.Message{Kind: conn.KindMessage, Payload: "0"})
	if idle, _ := woken(ws); len(idle) != 1 {
		t.Fatalf("read unlock woke %v, want one", idle)
	}
	// A resubscription (messages may have been lost) wakes everyone, whatever the policy.
	ch, ws = famTestChannel(wakeHead, []int64{1, 1}, nil)
	ch.onMessage(conn.Message{Kind: conn.KindResubscribed})
	if idle, _ := woken(ws); len(idle) != 2 {
		t.Fatalf("resubscription woke %v, want all", idle)
	}
}

func TestLeavingWaiterPassesAnUnusedWakeUpOn(t *testing.T) {
	ch, ws := famTestChannel(wakeHead, []int64{1, 1}, map[int]bool{0: true})
	ch.onMessage(conn.Message{Kind: conn.KindMessage, Payload: "0"}) // head busy: again
	act := ws[0].finishLocked(false)                                 // it gives up without using it
	if act.wake != ws[1] || ws[1].state != fwAttempting {
		t.Fatal("the wake-up was not passed to the next waiter")
	}
	if ch.n != 1 || ch.head != ws[1] {
		t.Fatalf("queue after leaving: n %d", ch.n)
	}
	if _, in := ws[0].f.waits[ws[0]]; in {
		t.Fatal("finished waiter still registered")
	}
}

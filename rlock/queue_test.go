package rlock

import (
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
	"github.com/locksmith-go/locksmith/timer"
)

// The wake rules of the waiting engine, on queues built by hand: which waiters a message sets attempting.

// stubCall records attempts instead of sending them.
type stubCall struct {
	sends int
	need  int64
}

func (s *stubCall) channel() string                    { return "ch" }
func (s *stubCall) send()                              { s.sends++ }
func (s *stubCall) grantLocked(outcome) (*hold, error) { return nil, nil }
func (s *stubCall) succeed(outcome, *hold)             {}
func (s *stubCall) fail(error) bool                    { return true }
func (s *stubCall) undo(outcome)                       {}
func (s *stubCall) giveBackResult()                    {}
func (s *stubCall) left(then func())                   { runThen(then) }
func (s *stubCall) lostInFlight()                      {}
func (s *stubCall) unknownOutcome(cause error) error   { return cause }
func (s *stubCall) permits() int64                     { return max(s.need, 1) }

// testQueue builds a subscribed queue of waiters needing the given permits, all idle except those marked busy
// (an attempt in flight).
func testQueue(rule wakeRule, needs []int64, busy map[int]bool) (*queue, []*waiter) {
	c := &Client{}
	sh := &shard{c: c, queues: map[string]*queue{}, holds: map[holdKey]*hold{}}
	ws := make([]*waiter, len(needs))
	for i, n := range needs {
		w := &waiter{sh: sh, rule: rule, state: wIdle}
		w.call = &stubCall{need: n}
		if busy[i] {
			w.state = wAttempting
		}
		c.joinLocked(w)
		ws[i] = w
	}
	q := sh.queues["ch"]
	q.subscribed = true
	return q, ws
}

// deliver hands the queue a message (or a resubscription) and sends the attempts it decided.
func deliver(q *queue, payload string, kind conn.MessageKind) {
	q.onMessage(conn.Message{Kind: kind, Channel: q.key, Payload: payload})
}

// woken returns the waiters that were sent an attempt, and those told to attempt again.
func woken(ws []*waiter) (sent, again []int) {
	for i, w := range ws {
		if w.call.(*stubCall).sends > 0 {
			sent = append(sent, i)
		}
		if w.again {
			again = append(again, i)
		}
	}
	return sent, again
}

func TestWakeOnALockChannelWakesOnlyTheHead(t *testing.T) {
	q, ws := testQueue(wakeOne, []int64{1, 1, 1}, nil)
	deliver(q, "0", conn.KindMessage)
	if sent, _ := woken(ws); len(sent) != 1 || sent[0] != 0 || ws[0].state != wAttempting {
		t.Fatalf("woken %v, want [0]", sent)
	}
	// A head whose attempt is in flight is told to attempt again instead; nobody else moves.
	q, ws = testQueue(wakeOne, []int64{1, 1}, map[int]bool{0: true})
	deliver(q, "0", conn.KindMessage)
	if sent, again := woken(ws); len(again) != 1 || again[0] != 0 || len(sent) != 0 {
		t.Fatalf("again %v, woken %v", again, sent)
	}
	if ws[1].state != wIdle {
		t.Fatal("the second waiter was woken")
	}
	// A resubscription (a release may have been missed) wakes the head too, and only the head: the others wait
	// for it to go.
	q, ws = testQueue(wakeOne, []int64{1, 1}, nil)
	deliver(q, "", conn.KindResubscribed)
	if sent, _ := woken(ws); len(sent) != 1 || sent[0] != 0 {
		t.Fatalf("resubscription woke %v, want [0]", sent)
	}
}

func TestWakeOnASemaphoreChannelWakesWhomThePublishedPermitsCover(t *testing.T) {
	q, ws := testQueue(wakePermits, []int64{2, 1, 3, 1}, nil)
	deliver(q, "3", conn.KindMessage)
	// 2 + 1 cover the first two; the third needs 3 more: stop there (queue order is kept).
	if sent, _ := woken(ws); len(sent) != 2 || sent[0] != 0 || sent[1] != 1 {
		t.Fatalf("woken %v, want [0 1]", sent)
	}
	q, ws = testQueue(wakePermits, []int64{1, 1}, nil)
	deliver(q, "0", conn.KindMessage)
	if sent, _ := woken(ws); len(sent) != 0 {
		t.Fatalf("no permits published, but %v woken", sent)
	}
	// An unreadable payload, or a resubscription, wakes everyone (they look again).
	q, ws = testQueue(wakePermits, []int64{5, 5}, nil)
	deliver(q, "?", conn.KindMessage)
	if sent, _ := woken(ws); len(sent) != 2 {
		t.Fatalf("woken %v, want all", sent)
	}
	q, ws = testQueue(wakePermits, []int64{5, 5}, nil)
	deliver(q, "", conn.KindResubscribed)
	if sent, _ := woken(ws); len(sent) != 2 {
		t.Fatalf("resubscription woke %v, want all", sent)
	}
}

func TestWakeOnAReadWriteChannelWakesAllOnAWriteUnlockAndOneOtherwise(t *testing.T) {
	q, ws := testQueue(wakeRW, []int64{1, 1, 1}, nil)
	deliver(q, scripts.WriteUnlockMessage, conn.KindMessage)
	if sent, _ := woken(ws); len(sent) != 3 {
		t.Fatalf("write unlock woke %v, want all", sent)
	}
	q, ws = testQueue(wakeRW, []int64{1, 1, 1}, nil)
	deliver(q, scripts.UnlockMessage, conn.KindMessage)
	if sent, _ := woken(ws); len(sent) != 1 || sent[0] != 0 {
		t.Fatalf("read unlock woke %v, want [0]", sent)
	}
}

func TestWakeOnALatchChannelWakesEveryone(t *testing.T) {
	q, ws := testQueue(wakeAll, []int64{1, 1, 1}, map[int]bool{1: true})
	deliver(q, scripts.LatchZeroMessage, conn.KindMessage)
	if sent, again := woken(ws); len(sent) != 2 || len(again) != 1 || again[0] != 1 {
		t.Fatalf("woken %v, again %v; want [0 2] and [1]", sent, again)
	}
}

func TestMessageBeforeTheSubscriptionIsConfirmedWaitsForTheConfirmation(t *testing.T) {
	q, ws := testQueue(wakeOne, []int64{1, 1}, nil)
	q.subscribed = false
	deliver(q, "0", conn.KindMessage)
	if sent, again := woken(ws); len(sent) != 0 || len(again) != 1 {
		t.Fatalf("woken %v, again %v: nothing may attempt before the subscription is confirmed", sent, again)
	}
}

func TestHeadThatLeavesUngrantedLetsTheNextAttemptAtOnce(t *testing.T) {
	q, ws := testQueue(wakeOne, []int64{1, 1, 1}, map[int]bool{0: true})
	deliver(q, "0", conn.KindMessage) // head busy: again
	act := ws[0].leaveLocked(false)   // it gives up without using the wake-up
	if act.attempt != ws[1] || ws[1].state != wAttempting || ws[2].state != wIdle {
		t.Fatal("the next head was not set attempting")
	}
	if q.n != 2 || q.head != ws[1] || ws[0].state != wDone {
		t.Fatalf("queue after leaving: n %d", q.n)
	}
}

func TestNonHeadThatLeavesPassesAnUnusedWakeUpOn(t *testing.T) {
	q, ws := testQueue(wakeAll, []int64{1, 1, 1}, map[int]bool{0: true, 1: true})
	deliver(q, "0", conn.KindMessage) // the first two are busy: again; the third attempts
	ws[2].state = wAttempting         // its attempt is in flight too
	act := ws[1].leaveLocked(false)
	if act.attempt != nil || act.attempt2 != nil || !ws[2].again {
		t.Fatalf("the unused wake-up was not passed on: %+v, again %v", act, ws[2].again)
	}
	if q.n != 2 {
		t.Fatalf("n %d", q.n)
	}
}

func TestHeadGrantedAnExclusiveLockMakesTheNextWaitForItsRelease(t *testing.T) {
	tm := timer.New(timer.Config{})
	defer tm.Stop()
	c := &Client{timer: tm, epoch: time.Now()}
	sh := &shard{c: c, queues: map[string]*queue{}, lockQueues: map[string]*queue{}, holds: map[holdKey]*hold{}}
	lo := &lockObject{object: object{c: c, sh: sh, name: "x"}}
	var ws []*lockCall
	for i := range 2 {
		lc := &lockCall{lo: lo, lease: time.Second}
		lc.waiter = waiter{sh: sh, call: lc, rule: wakeOne, exclusive: true, state: wIdle}
		if i == 0 {
			lc.state = wAttempting
		}
		c.joinLocked(&lc.waiter)
		ws = append(ws, lc)
	}
	q := sh.lockQueues["x"]
	q.subscribed = true
	act := ws[0].leaveLocked(true)
	if act.attempt != nil || ws[1].state != wIdle || q.head != &ws[1].waiter {
		t.Fatal("the next head attempted while the lock is held by the head that left")
	}
	if ws[1].tm == nil {
		t.Fatal("the next head has no bound: it would wait for a release message alone")
	}
}

func TestQueuedRefusalsTellAWaiterQueuedAgainApart(t *testing.T) {
	lc := &lockCall{lease: 4500 * time.Millisecond} // refreshes every 1.5 s
	for _, tc := range []struct {
		reply    int64
		bound    time.Duration
		requeued bool
	}{
		{scripts.QueuedNotHead, 1500 * time.Millisecond, false},
		{250, 250 * time.Millisecond, false},
		{5000, 1500 * time.Millisecond, false},
		{scripts.RequeuedNotHead, 1500 * time.Millisecond, true},
		{scripts.RequeuedHeadBase - 250, 250 * time.Millisecond, true},
		{scripts.RequeuedHeadBase - 5000, 1500 * time.Millisecond, true},
		{scripts.RequeuedHeadBase + 2, recheckBound, true}, // a PTTL of -2: the lock is free
	} {
		o := lc.queuedRefusal(tc.reply)
		if !o.queued || o.granted || o.bound != tc.bound || o.requeued != tc.requeued {
			t.Errorf("queuedRefusal(%d) = %+v, want queued, bound %v, requeued %v", tc.reply, o, tc.bound, tc.requeued)
		}
	}
}

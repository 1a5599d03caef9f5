package workload

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/redisadmin"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

func newTestFIFO(t *testing.T, srv *redistest.Server) (*FIFOLock, *redisadmin.Client) {
	t.Helper()
	lib, err := NewFIFO(context.Background(), Config{Addr: srv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := redisadmin.Dial(context.Background(), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = lib.Close()
		_ = admin.Close()
	})
	return lib.(*FIFOLock), admin
}

// queueOf returns the contender ids queued on lock name, head first.
func queueOf(t *testing.T, admin *redisadmin.Client, name string) []string {
	t.Helper()
	v, err := admin.Do(context.Background(), "LRANGE", "bench-fifo:{"+name+"}:queue", "0", "-1")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range v.([]any) {
		ids = append(ids, x.(string))
	}
	return ids
}

// queueWatch follows the changes of a lock's queue through keyspace
// notifications, so that a test can wait for a waiter's RPUSH, an event only
// the server sees.
type queueWatch struct {
	admin, sub *redisadmin.Client
	name       string
}

// watchQueue subscribes to the list events of lock name's queue. Call it
// before the changes to await.
func watchQueue(t *testing.T, srv *redistest.Server, admin *redisadmin.Client, name string) *queueWatch {
	t.Helper()
	ctx := context.Background()
	if _, err := admin.Do(ctx, "CONFIG", "SET", "notify-keyspace-events", "Kl"); err != nil {
		t.Fatal(err)
	}
	sub, err := redisadmin.Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	if _, err := sub.Do(ctx, "SUBSCRIBE", "__keyspace@0__:bench-fifo:{"+name+"}:queue"); err != nil {
		t.Fatal(err)
	}
	return &queueWatch{admin: admin, sub: sub, name: name}
}

// await returns once n contenders are queued, reading the queue again after
// every change.
func (w *queueWatch) await(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(queueOf(t, w.admin, w.name)) != n {
		if _, err := w.sub.Receive(ctx); err != nil {
			t.Fatalf("queue %v, want %d entries: %v", queueOf(t, w.admin, w.name), n, err)
		}
	}
}

func TestFIFOGrantsInTheOrderOfArrival(t *testing.T) {
	srv := redistest.Start(t)
	lib, admin := newTestFIFO(t, srv)
	watch := watchQueue(t, srv, admin, "k")
	ctx := context.Background()
	first, err := lib.Bind("k").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan int, 3)
	helds := make([]Held, 3)
	for i := range 3 {
		k := lib.Bind("k")
		go func() {
			h, err := k.Lock(ctx)
			if err != nil {
				t.Error(err)
			}
			helds[i] = h
			granted <- i
		}()
		watch.await(t, i+2) // i+1 waiters behind the holder: arrival order is known
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for want := range 3 {
		got := <-granted
		if got != want {
			t.Fatalf("grant %d went to waiter %d, want %d (first come, first served)", want, got, want)
		}
		select {
		case other := <-granted:
			t.Fatalf("waiter %d granted while waiter %d holds the lock", other, got)
		default:
		}
		if err := helds[got].Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if q := queueOf(t, admin, "k"); len(q) != 0 {
		t.Fatalf("queue %v after every release, want empty", q)
	}
	// 4 RPUSH, 4 releases, and a BLPOP at least for each of the 3 waiters.
	if n, ok := lib.Commands(); !ok || n < 11 {
		t.Errorf("Commands() = %d, %v; want at least 11", n, ok)
	}
	if err := first.Unlock(ctx); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("a second Unlock: %v, want ErrNotOwner", err)
	}
}

func TestFIFOWaiterThatLeavesTakesItsEntryOut(t *testing.T) {
	srv := redistest.Start(t)
	lib, admin := newTestFIFO(t, srv)
	watch := watchQueue(t, srv, admin, "k")
	held, err := lib.Lock(context.Background(), "k") // unbound: its own connection, closed by Unlock
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := lib.Lock(ctx, "k")
		done <- err
	}()
	watch.await(t, 2)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock after cancel: %v, want context.Canceled", err)
	}
	if q := queueOf(t, admin, "k"); len(q) != 1 {
		t.Fatalf("queue %v after the waiter left, want the holder only", q)
	}
	if err := held.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The lock is free now: a bound locker, connected, with an ended context
	// still gets nothing.
	k := lib.Bind("k")
	h, err := k.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Lock(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock of a free lock with an ended context: %v, want context.Canceled", err)
	}
	if q := queueOf(t, admin, "k"); len(q) != 0 {
		t.Fatalf("queue %v after a Lock with an ended context, want empty", q)
	}
	k.(*fifoLocker).drop()
	if n := len(lib.conns); n != 0 {
		t.Fatalf("%d connections open after the unbound acquisitions ended", n)
	}
}

func TestFIFOWaiterHandedTheLockAsItLeavesPassesItOn(t *testing.T) {
	srv := redistest.Start(t)
	lib, admin := newTestFIFO(t, srv)
	ctx := context.Background()
	b, c := lib.Bind("k").(*fifoLocker), lib.Bind("k").(*fifoLocker)
	conn, err := lib.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.c = conn
	// b was handed the lock (head, wake-up pushed) when it gave up: the state
	// the leave script meets when a release and a cancellation cross.
	if _, err := admin.Do(ctx, "RPUSH", b.queue, b.id, c.id); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Do(ctx, "RPUSH", b.wake, "1"); err != nil {
		t.Fatal(err)
	}
	v, err := b.eval(ctx, fifoLeave, []string{b.queue, b.wake}, b.id, b.wakePrefix)
	if err != nil || v != int64(1) {
		t.Fatalf("leave: %v, %v; want 1 (passed on)", v, err)
	}
	if q := queueOf(t, admin, "k"); len(q) != 1 || q[0] != c.id {
		t.Fatalf("queue %v, want [%s]", q, c.id)
	}
	for key, want := range map[string]int64{b.wake: 0, c.wake: 1} {
		if n, err := admin.Do(ctx, "LLEN", key); err != nil || n != want {
			t.Fatalf("LLEN %s = %v (%v), want %d", key, n, err, want)
		}
	}
}

func TestSpreadFIFOReferenceServesProcessesInTurn(t *testing.T) {
	srv := redistest.Start(t)
	r := runSpread(t, spreadSpec(ContendedKeysSpread, "fifo", 3, 1, 1, srv), srv)
	if r.Ops == 0 || r.Violations != 0 || r.ServerCounterGot != r.ServerCounterExpected {
		t.Fatalf("acquisitions %d, violations %d, server counter %d/%d", r.Ops, r.Violations,
			r.ServerCounterExpected, r.ServerCounterGot)
	}
	// A releaser queues again behind the two contenders already waiting, so
	// grants go round the processes; only at the window's end, when the
	// others have left the queue, may one process take the lock again (a
	// barging lock does it for most grants).
	if r.ReacqPct > 20 || r.JainPerProcess < 0.95 {
		t.Errorf("reacquisitions %v%%, Jain per process %v (longest run %d): grants must go round the processes",
			r.ReacqPct, r.JainPerProcess, r.LongestRun)
	}
}

package integration

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// Contention between clients, as between processes: each Client here stands for a process of its own (its own
// connections, owner ids and queues).

// evalCalls returns the server's count of EVALSHA and EVAL calls so far.
func evalCalls(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	st, err := srv.Info(context.Background(), "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, k := range []string{"cmdstat_evalsha", "cmdstat_eval"} {
		v := st[k]
		for _, f := range splitStat(v) {
			if f[0] == "calls" {
				c, _ := strconv.ParseInt(f[1], 10, 64)
				n += c
			}
		}
	}
	return n
}

// splitStat splits "calls=3,usec=5,..." into pairs.
func splitStat(v string) [][2]string {
	var out [][2]string
	for len(v) > 0 {
		field := v
		if i := indexByte(v, ','); i >= 0 {
			field, v = v[:i], v[i+1:]
		} else {
			v = ""
		}
		if i := indexByte(field, '='); i >= 0 {
			out = append(out, [2]string{field[:i], field[i+1:]})
		}
	}
	return out
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

// Waiters of different clients are served in the order they came, and a release wakes the next waiter only: the
// server runs one release and nothing else per hand-over, however many clients wait.
func TestWaitersOfDifferentClientsAreServedInOrderWithOneScriptPerHandOver(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxT(t, 30*time.Second)
	const clients = 8
	holder := newLockClient(t, srv, 0)
	held, err := holder.Lock("fifo").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var order []int
	var mu sync.Mutex
	var wg sync.WaitGroup
	release := make(chan struct{})
	for i := range clients {
		c := newLockClient(t, srv, 0)
		// One waiter after the other, each queued before the next starts.
		before := evalCalls(t, srv)
		wg.Add(1)
		go func() { // owner: this test; returns when its Lock is granted and released
			defer wg.Done()
			h, err := c.Lock("fifo").Lock(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			<-release
			if err := c.Lock("fifo").Unlock(h); err != nil {
				t.Error(err)
			}
		}()
		eventually(t, 5*time.Second, "the waiter's attempt", func() bool { return evalCalls(t, srv) > before })
		eventually(t, 5*time.Second, "the waiter queued", func() bool {
			n, _ := srv.DoInt(ctx, "LLEN", "locksmith_lock_queue:{fifo}")
			return n == int64(i+1)
		})
	}
	before := evalCalls(t, srv)
	close(release) // each holder releases at once; the next is granted by that release
	mustUnlock(t, holder.Lock("fifo"), held)
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, got := range order {
		if got != i {
			t.Fatalf("grant order %v, want first come, first served", order)
		}
	}
	// clients+1 releases (the holder's and each waiter's); a herd would add an attempt of every waiting client
	// per release (about clients²/2 more). A waiter's refresh (every 1.7 s) may add a few.
	if n := evalCalls(t, srv) - before; n > clients+1+clients/2 {
		t.Errorf("%d scripts for %d hand-overs; want about one per hand-over", n, clients+1)
	}
}

// Under continuous contention by queued clients, a client that does not queue (Redisson: its lock script, woken by
// the unlock message) still gets the lock: the queue leaves it a gap after every second of hand-overs. With two
// clients taking turns the queue empties and fills again at every hand-over, and each client's runs are short:
// the run of hand-overs must still be counted from its first, or the gap never comes. (Each holder keeps the lock
// a little, so that the other client is queued again before every release: with instant releases the lock is
// often free anyway.)
func TestARedissonWaiterGetsTheLockUnderContinuousContention(t *testing.T) {
	for _, tc := range []struct {
		clients, each int
		hold          time.Duration
	}{{4, 2, 0}, {2, 2, time.Millisecond}, {2, 1, 2 * time.Millisecond}} {
		t.Run(fmt.Sprintf("%dx%d", tc.clients, tc.each), func(t *testing.T) {
			redissonWaiterUnderContention(t, tc.clients, tc.each, tc.hold)
		})
	}
}

// redissonWaiterUnderContention runs clients rlock Clients with each goroutines looping Lock, hold, Unlock on one
// name, and checks that a Redisson waiter gets the lock within about a second.
func redissonWaiterUnderContention(t *testing.T, clients, each int, hold time.Duration) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var grants atomic.Int64
	for range clients {
		c := newLockClient(t, srv, 0)
		for range each {
			wg.Add(1)
			go func() { // owner: this test; loops until stop
				defer wg.Done()
				l := c.Lock("busy")
				for {
					select {
					case <-stop:
						return
					default:
					}
					h, err := l.Lock(ctx)
					if err != nil {
						return
					}
					grants.Add(1)
					time.Sleep(hold) // the critical section's length, not a synchronisation
					l.Unlock(h)
				}
			}()
		}
	}
	defer func() { close(stop); wg.Wait() }()
	eventually(t, 5*time.Second, "contention", func() bool { return grants.Load() > 100 })

	java := javaClient{t: t, srv: srv}
	next := java.subscribe("busy")
	start := time.Now()
	for {
		if ok, _ := java.lock("busy", 30*time.Second); ok {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the Redisson waiter did not get the lock within 10 s of continuous contention (%d grants to "+
				"the others)", grants.Load())
		}
		next(2 * time.Second) // woken by the unlock message, or looks again
	}
	waited := time.Since(start)
	java.unlock("busy")
	t.Logf("the Redisson waiter got the lock after %v (the others had %d grants)", waited, grants.Load())
	if waited > 3*time.Second {
		t.Errorf("the Redisson waiter waited %v; the gap comes every second", waited)
	}
}

// A client whose process died while its waiter was queued holds the queue up for a bounded time only: an entry no
// attempt refreshed is dropped once its deadline passes, and one granted the lock before that holds it for its
// grant lease (a watchdog waiter's: the queue's 5 s liveness window; here a short lease) — then the waiters behind
// it go on. The dead waiters are played with raw entries (what a dead client leaves behind).
func TestADeadClientsWaitersBlockTheQueueForABoundedTime(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxT(t, 30*time.Second)
	holder := newLockClient(t, srv, 0)
	held, err := holder.Lock("dead").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now, err := srv.DoStrings(ctx, "TIME")
	if err != nil {
		t.Fatal(err)
	}
	sec, _ := strconv.ParseInt(now[0], 10, 64)
	ms := sec * 1000
	const gone = "0b6d3c4e-1111-4e2f-9a7b-5c6d7e8f9a0b"
	expired := "g30000:1:" + gone + ":1" // its deadline passed: dropped at the next look
	dying := "g400:2:" + gone + ":2"     // still live: it is granted, and holds the lock its 400 ms lease
	for _, e := range []struct {
		entry    string
		deadline int64
	}{{expired, ms - 1000}, {dying, ms + 60_000}} {
		if _, err := srv.Do(ctx, "RPUSH", "locksmith_lock_queue:{dead}", e.entry); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Do(ctx, "ZADD", "locksmith_lock_timeout:{dead}", strconv.FormatInt(e.deadline, 10), e.entry); err != nil {
			t.Fatal(err)
		}
	}
	other := newLockClient(t, srv, 0)
	got := make(chan time.Time, 1)
	go func() { // owner: this test; returns when the live waiter's Lock returns
		h, err := other.Lock("dead").Lock(ctx)
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		got <- time.Now()
		other.Lock("dead").Unlock(h)
	}()
	// Its attempt drops the expired entry on the way: the queue is the dying entry, then the live waiter.
	eventually(t, 5*time.Second, "the live waiter queued", func() bool {
		q, _ := srv.DoStrings(ctx, "LRANGE", "locksmith_lock_queue:{dead}", "0", "-1")
		return len(q) == 2 && q[0] == dying
	})
	released := time.Now()
	mustUnlock(t, holder.Lock("dead"), held)
	if m := hgetall(t, srv, "dead"); m[gone+":2"] != "1" {
		t.Fatalf("after the release: %v, want the dead but still live entry granted", m)
	}
	select {
	case at, ok := <-got:
		if !ok {
			return
		}
		// The dead waiter's grant lasts 400 ms. The live waiter, now the head, is not told so (a hand-over tells only
		// the grantee): it takes the lock by its next attempt, at most one refresh interval (a third of the 5 s
		// liveness window) after the grant ended — earlier when its last attempt came after the hand-over.
		const grantLease, refresh = 400 * time.Millisecond, 5 * time.Second / 3
		if d := at.Sub(released); d < grantLease-100*time.Millisecond || d > grantLease+refresh+500*time.Millisecond {
			t.Errorf("the live waiter got the lock %v after the release; want between the dead grant's %v and "+
				"one refresh interval (%v) after it", d, grantLease, refresh)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the live waiter never got the lock: dead entries held the queue")
	}
}

// A client passes the lock among its own goroutines without a command of another process in between only for a
// bounded run: a waiter of another client, once queued, gets the lock after at most 8 more grants to the first
// client (its run), however many goroutines it has waiting.
func TestAClientsRunAmongItsOwnWaitersIsBounded(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxT(t, 30*time.Second)
	busy := newLockClient(t, srv, 0)
	var grants atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() { // owner: this test; loops until stop
			defer wg.Done()
			l := busy.Lock("run")
			for {
				select {
				case <-stop:
					return
				default:
				}
				h, err := l.Lock(ctx)
				if err != nil {
					return
				}
				grants.Add(1)
				l.Unlock(h)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	eventually(t, 5*time.Second, "contention", func() bool { return grants.Load() > 200 })
	other := newLockClient(t, srv, 0)
	for range 20 {
		before := evalCalls(t, srv)
		f := other.Lock("run").LockAsync(ctx)
		// Count the busy client's grants from when the other waiter is queued (its attempt ran) to its grant.
		eventually(t, 5*time.Second, "the other waiter's attempt", func() bool { return evalCalls(t, srv) > before })
		from := grants.Load()
		h, err := f.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		run := grants.Load() - from
		other.Lock("run").Unlock(h)
		// 8 grants of the run, plus grants in flight when the attempt was counted.
		if run > 8+6 {
			t.Fatalf("the busy client had %d grants while another client's waiter was queued; its run is at most 8",
				run)
		}
	}
}

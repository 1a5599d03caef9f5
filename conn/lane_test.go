package conn

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// newLaneTestClient starts a standalone Client (with its latency lane) and closes it at the end of the test.
func newLaneTestClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if laneConn(c) == nil || !laneConn(c).isOpen() {
		t.Fatal("the latency lane is not open after New")
	}
	return c
}

// laneConn returns the current connection of c's latency lane.
func laneConn(c *Client) *pconn { return c.node.pool.lane.cur.Load() }

func laneTestCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A sequential caller's commands all take the lane, and each Get reads its own reply: the background reader never
// gets the role. With context.Background and with a context that can end (the Get then registers an interrupt).
func TestLaneSequentialGetsReadTheirOwnReplies(t *testing.T) {
	trustIdleLane(t) // these count what went over the lane
	srv := redistest.Start(t)
	c := newLaneTestClient(t, Config{Addr: srv.Addr()})
	for _, ctx := range []context.Context{context.Background(), laneTestCtx(t)} {
		lane := laneConn(c)
		replies, handovers := lane.replies.Load(), lane.lane.handovers.Load()
		for i := range 200 {
			want := strconv.Itoa(i)
			v, err := c.Do(ctx, "ECHO", want).Get(ctx)
			if err != nil || v.Str != want {
				t.Fatalf("ECHO %s = %v, %v", want, v, err)
			}
		}
		if got := lane.replies.Load() - replies; got != 200 {
			t.Fatalf("%d of 200 sequential replies came over the lane", got)
		}
		if got := lane.lane.handovers.Load() - handovers; got != 0 {
			t.Fatalf("the background reader took the lane %d times; want 0 (every Get drives)", got)
		}
	}
}

// A Pipeline on the idle lane is driven too: the first Get reads every reply it needs.
func TestLanePipelineIsDriven(t *testing.T) {
	trustIdleLane(t) // these count what went over the lane
	srv := redistest.Start(t)
	c := newLaneTestClient(t, Config{Addr: srv.Addr()})
	ctx := laneTestCtx(t)
	handovers := laneConn(c).lane.handovers.Load()
	futs := c.Pipeline(ctx, Cmd{Args: []string{"ECHO", "a"}}, Cmd{Args: []string{"ECHO", "b"}}, Cmd{Args: []string{"ECHO", "c"}})
	for i, want := range []string{"a", "b", "c"} {
		if v, err := futs[i].Get(ctx); err != nil || v.Str != want {
			t.Fatalf("pipeline reply %d = %v, %v; want %s", i, v, err, want)
		}
	}
	if got := laneConn(c).lane.handovers.Load() - handovers; got != 0 {
		t.Fatalf("background handovers = %d; want 0", got)
	}
}

// A lane future observed only with OnComplete is read by the background reader; the next sequential Gets get the
// lane back and drive it again.
func TestLaneOnCompleteIsReadInTheBackgroundThenDrivenAgain(t *testing.T) {
	trustIdleLane(t) // these count what went over the lane
	srv := redistest.Start(t)
	c := newLaneTestClient(t, Config{Addr: srv.Addr()})
	ctx := laneTestCtx(t)
	lane := laneConn(c)
	got := make(chan resp.Value, 1)
	c.Do(ctx, "ECHO", "cb").OnComplete(func(v resp.Value, err error) {
		if err != nil {
			t.Error(err)
		}
		got <- v
	})
	select {
	case v := <-got:
		if v.Str != "cb" {
			t.Fatalf("callback got %v", v)
		}
	case <-ctx.Done():
		t.Fatal("the callback never ran: nobody read the reply")
	}
	if lane.lane.handovers.Load() == 0 {
		t.Fatal("no background handover for an OnComplete-only future")
	}
	// The first Get finds the background reader on the socket and asks for the role back.
	for i := range 3 {
		if _, err := c.Do(ctx, "PING").Get(ctx); err != nil {
			t.Fatalf("PING %d: %v", i, err)
		}
	}
	handovers := lane.lane.handovers.Load()
	for range 100 {
		if _, err := c.Do(ctx, "PING").Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := lane.lane.handovers.Load() - handovers; n != 0 {
		t.Fatalf("%d background handovers during sequential Gets after the switch back; want 0", n)
	}
}

// A lane command whose future nobody waits for (not Get, not OnComplete, not Done) still has its reply read: by the
// health check's fallback, after a check interval without replies. The lane is then usable again.
func TestLaneUnobservedReplyIsReadByTheFallback(t *testing.T) {
	trustIdleLane(t) // these count what went over the lane
	srv := redistest.Start(t)
	c := newLaneTestClient(t, Config{Addr: srv.Addr(), ResponseTimeout: 200 * time.Millisecond}) // checks every 50 ms
	ctx := laneTestCtx(t)
	lane := laneConn(c)
	f := c.Do(ctx, "ECHO", "dropped")
	for !f.IsDone() { // polling is the point: IsDone does not drive
		if ctx.Err() != nil {
			t.Fatal("the unobserved reply was never read")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if v, err, _ := f.Peek(); err != nil || v.Str != "dropped" {
		t.Fatalf("reply = %v, %v", v, err)
	}
	if laneConn(c) != lane {
		t.Fatal("the lane was reset instead of read")
	}
	if lane.lane.rescues.Load() == 0 {
		t.Fatal("read without the fallback: by whom?")
	}
	if v, err := c.Do(ctx, "ECHO", "next").Get(ctx); err != nil || v.Str != "next" {
		t.Fatalf("next command = %v, %v", v, err)
	}
}

// Get's context ending while it drives interrupts its read: Get returns the context's error, the future stays
// pending, and the reply, when it comes, is read in the background and completes the future.
func TestLaneGetContextEndsWhileDriving(t *testing.T) {
	trustIdleLane(t) // these count what went over the lane
	srv := redistest.Start(t)
	// A response timeout longer than the test: only the interruption can end the driving read.
	c := newLaneTestClient(t, Config{Addr: srv.Addr(), ResponseTimeout: time.Minute})
	ctx := laneTestCtx(t)
	lane := laneConn(c)
	f := c.Do(context.Background(), "BLPOP", "q", "0") // on the idle lane; blocks the server side until a push
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if err := getWithin(ctx, func() error { _, err := f.Get(short); return err }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get = %v; want DeadlineExceeded (the driving read was not interrupted)", err)
	}
	if f.IsDone() {
		t.Fatal("the future completed")
	}
	if lane.inflight.Load() != 1 {
		t.Fatalf("lane in flight = %d; want 1 (the BLPOP)", lane.inflight.Load())
	}
	// The lane is busy, so this goes to an event-loop connection.
	if _, err := c.Do(ctx, "LPUSH", "q", "v").Get(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := f.Get(ctx)
	if err != nil || len(v.Elems) != 2 || v.Elems[1].Str != "v" {
		t.Fatalf("BLPOP = %v, %v", v, err)
	}
}

// The command's own context ending while a Get(context.Background()) drives: the cancellation completes the
// future, which interrupts the driving read; the late reply is read and discarded in order.
func TestLaneCommandContextEndsWhileGetDrives(t *testing.T) {
	trustIdleLane(t) // these count what went over the lane
	srv := redistest.Start(t)
	c := newLaneTestClient(t, Config{Addr: srv.Addr(), ResponseTimeout: time.Minute})
	ctx := laneTestCtx(t)
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	f := c.Do(short, "BLPOP", "q2", "0")
	if err := getWithin(ctx, func() error { _, err := f.Get(context.Background()); return err }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get = %v; want DeadlineExceeded", err)
	}
	if _, err := c.Do(ctx, "LPUSH", "q2", "late").Get(ctx); err != nil {
		t.Fatal(err)
	}
	lane := laneConn(c)
	for lane.inflight.Load() != 0 { // the late BLPOP reply is read by someone
		if ctx.Err() != nil {
			t.Fatal("the cancelled command's late reply was never read")
		}
		time.Sleep(time.Millisecond)
	}
	for i := range 20 {
		want := "after" + strconv.Itoa(i)
		if v, err := c.Do(ctx, "ECHO", want).Get(ctx); err != nil || v.Str != want {
			t.Fatalf("ECHO %s = %v, %v (stream out of step?)", want, v, err)
		}
	}
	// The cancelled command's late reply was handed to the background reader when the drive stopped, not left
	// for the health check.
	if n := laneConn(c).lane.rescues.Load(); n != 0 {
		t.Fatalf("%d rescues; want 0", n)
	}
}

// A lane the server closed while nobody read it is noticed before a command is written on it: the command goes
// to an event-loop connection instead of failing with ErrConnLost (which would say it may have run).
func TestLaneClosedByTheServerWhileIdleIsProbed(t *testing.T) {
	srv := redistest.Start(t)
	trusted := trustIdleLane(t)
	c := newLaneTestClient(t, Config{Addr: srv.Addr(), PoolSize: 1})
	ctx := laneTestCtx(t)
	lane := laneConn(c)
	id, err := c.Do(ctx, "CLIENT", "ID").Get(ctx) // sequential: answered over the lane
	if err != nil || laneConn(c).replies.Load() == 0 {
		t.Fatalf("CLIENT ID = %v, %v (over the lane: %d replies)", id, err, laneConn(c).replies.Load())
	}
	trusted()
	if n, err := srv.DoInt(ctx, "CLIENT", "KILL", "ID", strconv.FormatInt(id.Int, 10)); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL ID = %d, %v", n, err)
	}
	// An idle pause is the scenario: the probe runs only on a lane unread for laneProbeAfter.
	time.Sleep(2 * laneProbeAfter)
	if v, err := c.Do(ctx, "PING").Get(ctx); err != nil || v.Str != "PONG" {
		t.Fatalf("PING after the server closed the idle lane = %v, %v; want PONG", v, err)
	}
	// The Unix peek resets the lane before PING is sent; the portable path's background reader does it as soon
	// as it runs.
	for laneConn(c) == lane && lane.isOpen() {
		if ctx.Err() != nil {
			t.Fatal("the closed lane is still considered open")
		}
		runtime.Gosched()
	}
}

// A lane left unread while the server died is not trusted with a command even when no event-loop connection is
// open: the command must fail as never sent (ErrUnavailable), not as lost after it was written on a closed socket
// (ErrConnLost: it may have run).
func TestIdleLaneIsCheckedEvenWhenNothingElseIsOpen(t *testing.T) {
	srv := redistest.Start(t)
	c := newLaneTestClient(t, Config{Addr: srv.Addr(), PoolSize: 1,
		ReconnectMinBackoff: time.Minute, ReconnectMaxBackoff: time.Minute})
	ctx := laneTestCtx(t)
	if _, err := c.Do(ctx, "PING").Get(ctx); err != nil || laneConn(c).replies.Load() == 0 {
		t.Fatalf("PING = %v (over the lane: %d replies)", err, laneConn(c).replies.Load())
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	loop := c.node.pool.keepers[0]
	for pc := loop.cur.Load(); pc != nil && pc.isOpen(); pc = loop.cur.Load() {
		if ctx.Err() != nil {
			t.Fatal("the event-loop connection never saw the server die")
		}
		runtime.Gosched()
	}
	// An idle pause is the scenario: the lane is checked only once unread for laneProbeAfter.
	time.Sleep(2 * laneProbeAfter)
	_, err := c.Do(ctx, "PING").Get(ctx)
	if errors.Is(err, ErrConnLost) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("PING with the server dead = %v; want ErrUnavailable (never sent)", err)
	}
}

// Many goroutines with pauses (so the Client keeps going idle and the lane keeps being used) mixing every way of
// waiting: driven Gets, OnComplete, Done, and Gets whose context ends first. Every future gets its own reply:
// exactly one reader at a time, in FIFO order.
func TestLaneMixedObserversStress(t *testing.T) {
	srv := redistest.Start(t)
	c := newLaneTestClient(t, Config{Addr: srv.Addr(), PoolSize: 2})
	ctx := laneTestCtx(t)
	lane := laneConn(c)
	replies := lane.replies.Load()
	const workers, ops = 3, 400
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range ops {
				want := strconv.Itoa(w) + ":" + strconv.Itoa(i)
				var v resp.Value
				var err error
				switch rng.IntN(5) {
				case 0:
					v, err = c.Do(context.Background(), "ECHO", want).Get(context.Background())
				case 1:
					v, err = c.Do(ctx, "ECHO", want).Get(ctx)
				case 2:
					got := make(chan struct{})
					c.Do(ctx, "ECHO", want).OnComplete(func(rv resp.Value, rerr error) { v, err = rv, rerr; close(got) })
					<-got
				case 3:
					f := c.Do(ctx, "ECHO", want)
					<-f.Done()
					v, err, _ = f.Peek()
				case 4:
					f := c.Do(context.Background(), "ECHO", want)
					short, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(40))*time.Microsecond)
					_, _ = f.Get(short) // may end first: the future must still complete with its reply
					cancel()
					v, err = f.Get(ctx)
				}
				if err != nil || v.Str != want {
					t.Errorf("worker %d op %d: got %v, %v; want %s", w, i, v, err, want)
					return
				}
				if rng.IntN(4) == 0 {
					runtime.Gosched()
				} else {
					time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
				}
			}
		}()
	}
	wg.Wait()
	if laneConn(c) != lane {
		t.Fatal("the lane was replaced during the run")
	}
	if n := lane.lane.rescues.Load(); n != 0 {
		t.Fatalf("the health check found observed replies unread %d times; every reply had a reader", n)
	}
	if lane.replies.Load() == replies {
		t.Fatal("the lane was never used")
	}
	t.Logf("%d of %d replies over the lane, %d background handovers", lane.replies.Load()-replies, workers*ops,
		lane.lane.handovers.Load())
}

// getWithin runs get on another goroutine and returns its error, or a test failure when ctx (the test's bound)
// ends first: a Get that never returns is the bug these tests look for.
func getWithin(ctx context.Context, get func() error) error {
	done := make(chan error, 1)
	go func() { done <- get() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return errors.New("Get did not return within the test's bound")
	}
}

// While one Get drives the lane (its reply held back by the server), commands queued behind it whose replies no
// Get of theirs will read — a Get that found the role taken and parked, an OnComplete observer, an undriven
// command — are handed to the background reader when the driver stops: none waits for the health check.
func TestLaneDriverHandsTheRestToTheBackground(t *testing.T) {
	trustIdleLane(t) // these count what went over the lane
	srv := redistest.Start(t)
	// A check interval (1 s) longer than this test takes: a reply left unread would show as a rescue.
	c := newLaneTestClient(t, Config{Addr: srv.Addr(), ResponseTimeout: time.Minute})
	ctx := laneTestCtx(t)
	lane := laneConn(c)
	blocked := c.Do(context.Background(), "BLPOP", "hold", "0")
	first := make(chan error, 1)
	go func() { _, err := blocked.Get(ctx); first <- err }()
	for { // the first Get is driving: it holds the role
		lane.lane.mu.Lock()
		role := lane.lane.role
		lane.lane.mu.Unlock()
		if role == roleDriver {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the first Get never drove the lane")
		}
		runtime.Gosched()
	}
	// Queue behind it on the lane directly: pick would not choose a busy lane.
	queue := func(driven bool, payload string) *future.Future[resp.Value] {
		p := future.NewPromise[resp.Value]()
		if driven {
			p.SetDriver(lane.lane)
		}
		if err := lane.send(context.Background(), pending{p: p, kind: kindUser, slot: -1, driven: driven}, nil, nil, []string{"ECHO", payload}); err != nil {
			t.Fatal(err)
		}
		return p.Future()
	}
	parked := queue(true, "parked")
	second := make(chan resp.Value, 1)
	go func() { v, _ := parked.Get(ctx); second <- v }()
	for { // its Drive found the role taken and asked for a handover (then it parks)
		lane.lane.mu.Lock()
		asked := lane.lane.bgWanted
		lane.lane.mu.Unlock()
		if asked {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the second Get never asked the driver for a handover")
		}
		runtime.Gosched()
	}
	callback := make(chan resp.Value, 1)
	queue(true, "callback").OnComplete(func(v resp.Value, _ error) { callback <- v })
	undriven := queue(false, "undriven")

	if _, err := c.Do(ctx, "LPUSH", "hold", "x").Get(ctx); err != nil { // over an event-loop connection
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if v := <-second; v.Str != "parked" {
		t.Fatalf("parked Get = %v", v)
	}
	if v := <-callback; v.Str != "callback" {
		t.Fatalf("callback = %v", v)
	}
	if v, err := undriven.Get(ctx); err != nil || v.Str != "undriven" {
		t.Fatalf("undriven = %v, %v", v, err)
	}
	if n := lane.lane.rescues.Load(); n != 0 {
		t.Fatalf("%d replies were left for the health check", n)
	}
}

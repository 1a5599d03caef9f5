package rlock

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// Blocking calls drive their own attempts (syncLockCall, syncUnlockOp): the caller's Get reads the replies over the
// latency lane, and once it stops driving (its context ended, or it parked) the transport reads them by itself.

// goid returns the current goroutine's id, from the header of its stack trace ("goroutine N [running]:"). Tests
// only: it tells on which goroutine an observer event ran.
func goid() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	n, _ := strconv.ParseInt(string(b), 10, 64)
	return n
}

// goroutineObserver records the goroutine each Acquired and Released event ran on, and passes the events on.
type goroutineObserver struct {
	NopObserver
	mu       sync.Mutex // guards the fields below
	acquired []int64
	released []ReleasedEvent
	relGo    []int64
	relCh    chan ReleasedEvent // receives every Released event (buffered)
}

func newGoroutineObserver() *goroutineObserver {
	return &goroutineObserver{relCh: make(chan ReleasedEvent, 64)}
}

func (o *goroutineObserver) Acquired(AcquiredEvent) {
	o.mu.Lock()
	o.acquired = append(o.acquired, goid())
	o.mu.Unlock()
}

func (o *goroutineObserver) Released(e ReleasedEvent) {
	o.mu.Lock()
	o.released = append(o.released, e)
	o.relGo = append(o.relGo, goid())
	o.mu.Unlock()
	o.relCh <- e
}

func (o *goroutineObserver) reset() {
	o.mu.Lock()
	o.acquired, o.released, o.relGo = nil, nil, nil
	o.mu.Unlock()
}

// count reports how many recorded events of each kind ran on goroutine g.
func (o *goroutineObserver) count(g int64) (acquired, released, nAcq, nRel int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, a := range o.acquired {
		if a == g {
			acquired++
		}
	}
	for _, r := range o.relGo {
		if r == g {
			released++
		}
	}
	return acquired, released, len(o.acquired), len(o.relGo)
}

// lockUnlock runs n blocking Lock+Unlock pairs on l, one after another, and checks that each Unlock ended its held
// context with ErrReleased.
func lockUnlock(t *testing.T, ctx context.Context, l *Lock, n int) {
	t.Helper()
	for range n {
		held, err := l.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(held); err != nil {
			t.Fatal(err)
		}
		if cause := context.Cause(held); cause != ErrReleased {
			t.Fatalf("held context's cause after Unlock: %v, want ErrReleased", cause)
		}
	}
}

func relayClient(t *testing.T, srv *redistest.Server, obs Observer) *Client {
	t.Helper()
	// A response timeout and ping interval far beyond the tests' bounds: a reply left unread would stall the
	// connection until one of them, which the bounds below would notice.
	c, err := NewClient(Config{Observer: obs, Conn: conn.Config{Addr: srv.Addr(), ResponseTimeout: time.Minute,
		PingInterval: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A sequential caller's Lock and Unlock complete on the caller's own goroutine: its Get read the reply and ran the
// callbacks (which report the events), instead of parking until the lane's reader or an event loop had read it.
func TestBlockingLockAndUnlockReadTheirOwnReplies(t *testing.T) {
	srv := redistest.Start(t)
	obs := newGoroutineObserver()
	c := relayClient(t, srv, obs)
	ctx := context.Background()
	l := c.Lock("relay:own")
	// Warm up: the first EVALSHA of each script meets NOSCRIPT and is loaded and resent.
	lockUnlock(t, ctx, l, 2)
	obs.reset()
	const n = 20
	lockUnlock(t, ctx, l, n)
	// The lane takes a command only while the client is otherwise idle, which a sequential caller is, but a
	// health-check PING may take it now and then: most pairs, not all, must be read by the caller.
	acq, rel, nAcq, nRel := obs.count(goid())
	if nAcq != n || nRel != n {
		t.Fatalf("%d Acquired and %d Released events, want %d each", nAcq, nRel, n)
	}
	if acq < n*3/4 || rel < n*3/4 {
		t.Errorf("Acquired ran on the caller's goroutine %d of %d times, Released %d of %d: want at least %d each "+
			"(the caller's Get reads its own replies)", acq, n, rel, n, n*3/4)
	}

	// Async calls have no driver; they keep working next to the blocking ones on the same lane. (Which goroutine
	// completes them is not asserted: a reply read before OnComplete is registered runs the callback on the
	// caller's goroutine.)
	for range n {
		held, err := l.LockAsync(ctx).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.UnlockAsync(held).Get(ctx); err != nil {
			t.Fatal(err)
		}
		held, err = l.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(held); err != nil {
			t.Fatal(err)
		}
	}
}

// A blocking Lock whose context ends while its Get drives the attempt in flight returns the context's error; the
// reply it stopped reading is read by the transport all the same (the relay marks it unattended), so the grant
// that arrives later is released at once and the client goes on working.
func TestBlockingLockWhoseContextEndsWhileDrivingGivesTheGrantBack(t *testing.T) {
	srv := redistest.Start(t)
	obs := newGoroutineObserver()
	c := relayClient(t, srv, obs)
	bg := context.Background()
	l := c.Lock("relay:ctx")
	held, err := l.Lock(bg) // warm up (script loads)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	<-obs.relCh

	// Writes (scripts included) wait on the server until it is unpaused: ctx ends once the attempt is seen
	// waiting there, in flight.
	if _, err := srv.Do(bg, "CLIENT", "PAUSE", "20000", "WRITE"); err != nil {
		t.Fatal(err)
	}
	unpause := func() {
		if _, err := srv.Do(bg, "CLIENT", "UNPAUSE"); err != nil {
			t.Error(err)
		}
	}
	defer unpause() // a no-op once unpaused below
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		_, err := l.Lock(ctx)
		got <- err
	}()
	waitFor(t, func() bool { return postponedScripts(t, srv) > 0 })
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock = %v, want context.Canceled", err)
	}
	// The pause ends, the grant arrives, nobody waits for it: it is released. An unread reply would wait for the
	// response timeout or the health check, a minute here.
	unpause()
	select {
	case e := <-obs.relCh:
		if e.Err != nil {
			t.Fatalf("giving the grant back failed: %v", e.Err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the grant that raced with the end of the context was not given back within 10 s")
	}
	if n, err := srv.DoInt(bg, "EXISTS", "relay:ctx"); err != nil || n != 0 {
		t.Fatalf("EXISTS relay:ctx = %d, %v after the give-back, want 0", n, err)
	}
	held, err = l.Lock(bg)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
}

// A blocking Lock that has to wait parks: its next attempts are sent from the pub/sub handler (the holder's unlock
// message) or the timer's worker, with nobody driving them. They complete, by the transport's goroutines.
func TestBlockingLockThatParksIsGrantedByAttemptsItDoesNotDrive(t *testing.T) {
	srv := redistest.Start(t)
	holderObs, waiterObs := newGoroutineObserver(), newGoroutineObserver()
	holderC := relayClient(t, srv, holderObs)
	waiterC := relayClient(t, srv, waiterObs)
	bg := context.Background()
	name := "relay:park"
	for round := range 3 {
		held, err := holderC.Lock(name).Lock(bg)
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			held context.Context
			err  error
		}
		got := make(chan result, 1)
		go func() { // owned by the test; ends when Lock returns, received from below
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			h, err := waiterC.Lock(name).Lock(ctx)
			got <- result{h, err}
		}()
		// The waiter is refused (its first attempt, driven by its Get) and subscribes; release once it waits.
		waitForSubscribers(t, srv, channelName(name))
		if err := holderC.Lock(name).Unlock(held); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil {
			t.Fatalf("round %d: the waiting Lock failed: %v", round, r.err)
		}
		if err := waiterC.Lock(name).Unlock(r.held); err != nil {
			t.Fatal(err)
		}
	}
}

// waitForSubscribers waits until channel has a subscriber on the server (PUBSUB NUMSUB), bounded.
func waitForSubscribers(t *testing.T, srv *redistest.Server, channel string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := srv.Do(context.Background(), "PUBSUB", "NUMSUB", channel)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Array) == 2 && r.Array[1].Int > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nobody subscribed to %s within 10 s", channel)
		}
		time.Sleep(time.Millisecond) // polling the server: there is no event to await across processes
	}
}

// postponedScripts counts the server's clients whose script waits for the end of a CLIENT PAUSE.
func postponedScripts(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	r, err := srv.Do(context.Background(), "CLIENT", "LIST")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(r.Str, "\n") {
		var flags, cmd string
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "flags="); ok {
				flags = v
			} else if v, ok := strings.CutPrefix(f, "cmd="); ok {
				cmd = v
			}
		}
		if strings.Contains(flags, "b") && cmd == "evalsha" {
			n++
		}
	}
	return n
}

package conn

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// watchCounts returns the connection's context watches and their reference counts.
func watchCounts(pc *pconn) (watches, refs int) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.watches.Counts()
}

// Commands in flight with one context share one watch (one AfterFunc) on their connection; commands with contexts
// of their own get one each; every watch is released once its commands' replies are in.
func TestContextWatchesAreSharedAndReleased(t *testing.T) {
	srv := redistest.Start(t)
	c, err := New(Config{Addr: srv.Addr(), PoolSize: 1, DisableLatencyLane: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc := c.node.pool.keepers[0].cur.Load()
	ctx := laneTestCtx(t)

	// The connection's replies are held back until the test pushes to the gate (BLPOP blocks this connection
	// only; srv's own connection pushes).
	gate := func() *future.Future[resp.Value] { return c.Do(context.Background(), "BLPOP", "gate", "0") }
	open := func() {
		if _, err := srv.Do(context.Background(), "LPUSH", "gate", "x"); err != nil {
			t.Fatal(err)
		}
	}
	sleep := gate()
	var futs []*future.Future[resp.Value]
	for i := range 50 {
		futs = append(futs, c.Do(ctx, "ECHO", strconv.Itoa(i)))
	}
	if w, r := watchCounts(pc); w != 1 || r != 50 {
		t.Fatalf("shared context: %d watches, %d refs; want 1, 50", w, r)
	}
	var cancels []context.CancelFunc
	for i := range 10 {
		own, cancel := context.WithCancel(ctx)
		cancels = append(cancels, cancel)
		futs = append(futs, c.Do(own, "ECHO", "own"+strconv.Itoa(i)))
	}
	if w, r := watchCounts(pc); w != 11 || r != 60 {
		t.Fatalf("with 10 own contexts: %d watches, %d refs; want 11, 60", w, r)
	}
	open()
	if _, err := sleep.Get(ctx); err != nil {
		t.Fatal(err)
	}
	for i, f := range futs {
		want := strconv.Itoa(i)
		if i >= 50 {
			want = "own" + strconv.Itoa(i-50)
		}
		if v, err := f.Get(ctx); err != nil || v.Str != want {
			t.Fatalf("reply %d = %v, %v; want %s", i, v, err, want)
		}
	}
	for _, cancel := range cancels {
		cancel()
	}
	if w, r := watchCounts(pc); w != 0 || r != 0 {
		t.Fatalf("after the replies: %d watches, %d refs; want none", w, r)
	}

	// Cancelling one of two contexts in flight fails only its commands; the others get their replies in order.
	sleep = gate()
	doomed, cancel := context.WithCancel(ctx)
	var lost, kept []*future.Future[resp.Value]
	for i := range 5 {
		lost = append(lost, c.Do(doomed, "ECHO", "lost"))
		kept = append(kept, c.Do(ctx, "ECHO", "kept"+strconv.Itoa(i)))
	}
	cancel()
	for _, f := range lost {
		if _, err := f.Get(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled command: %v; want Canceled", err)
		}
	}
	if sleep.IsDone() {
		t.Fatal("the cancelled commands completed only after the gate opened")
	}
	open()
	for i, f := range kept {
		if v, err := f.Get(ctx); err != nil || v.Str != "kept"+strconv.Itoa(i) {
			t.Fatalf("kept %d = %v, %v", i, v, err)
		}
	}
	if w, r := watchCounts(pc); w != 0 || r != 0 {
		t.Fatalf("after cancellation: %d watches, %d refs; want none", w, r)
	}
}

// A script re-sent after NOSCRIPT keeps its watch, released once, when its second reply arrives.
func TestContextWatchSurvivesANoScriptResend(t *testing.T) {
	srv := redistest.Start(t)
	c, err := New(Config{Addr: srv.Addr(), PoolSize: 1, DisableLatencyLane: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc := c.node.pool.keepers[0].cur.Load()
	ctx := laneTestCtx(t)
	s := NewScript("return ARGV[1]")
	for i := range 3 {
		if _, err := srv.Do(ctx, "SCRIPT", "FLUSH"); err != nil {
			t.Fatal(err)
		}
		want := "v" + strconv.Itoa(i)
		if v, err := c.Eval(ctx, s, nil, want).Get(ctx); err != nil || v.Str != want {
			t.Fatalf("Eval after SCRIPT FLUSH = %v, %v", v, err)
		}
		if w, r := watchCounts(pc); w != 0 || r != 0 {
			t.Fatalf("after the resend: %d watches, %d refs; want none", w, r)
		}
	}
}

package integration

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/faultproxy"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// A release grants the lock to the head of the queue and tells its client on the client's grant channel. When that
// message comes late — after the grant's lease ended unclaimed and another owner took the lock — it must not be
// taken for a grant counted from the waiter's latest attempt: that attempt ran after the grant had expired (it was
// refused and queued the waiter again), and the lock is someone else's now.
func TestAGrantThatExpiredUnclaimedIsNotTaken(t *testing.T) {
	srv := redistest.Start(t)
	other := newLockClient(t, srv, 0)
	warmScripts(t, other, ctxT(t, 10*time.Second))
	// The path needs the waiter idle when its client is cut off, so that its next refresh is held back after the
	// grant; a waiter whose attempt was in flight then (its reply held back too) refreshes nothing, and the run is
	// made again on a fresh lock.
	for try := range 5 {
		if staleGrantRun(t, srv, other, "sg"+strconv.Itoa(try)) {
			return
		}
		t.Logf("run %d: the waiter had an attempt in flight when its client was cut off; again", try)
	}
	t.Fatal("no run found the waiter idle when its client was cut off")
}

// staleGrantRun runs the scenario on the lock called name and reports whether it could (see above).
func staleGrantRun(t *testing.T, srv *redistest.Server, other *rlock.Client, name string) bool {
	ctx := ctxT(t, 30*time.Second)
	px := faultproxy.Start(t, srv.Addr())
	// The waiter's client is behind the proxy, with a response timeout far longer than the held-back replies, and
	// no PING of its own.
	waiting, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: px.Addr(),
		ResponseTimeout: 20 * time.Second, PingInterval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	warmScripts(t, waiting, ctx)
	l := other.Lock(name)
	held, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}

	type result struct {
		held context.Context
		err  error
	}
	const lease = 1200 * time.Millisecond // the waiter refreshes its entry every 400 ms
	waited := make(chan result, 1)
	go func() {
		h, err := waiting.Lock(name).TryLock(ctx, 20*time.Second, lease)
		waited <- result{h, err}
	}()
	queue, deadlines := "locksmith_lock_queue:{"+name+"}", "locksmith_lock_timeout:{"+name+"}"
	eventually(t, 5*time.Second, "the waiter to be queued, told so, and subscribed to its grant channel", func() bool {
		n, err := srv.DoInt(ctx, "LLEN", queue)
		ch, err2 := srv.DoStrings(ctx, "PUBSUB", "CHANNELS", "locksmith_lock__channel:{"+name+"}:*")
		return err == nil && err2 == nil && n == 1 && len(ch) == 1 && waiting.Stats().Waiters == 1
	})

	// Everything between the waiter's client and the server is held back: the grant message, and the waiter's
	// next refresh, sent after the grant.
	px.Stall(faultproxy.Both)
	sent := px.Read(faultproxy.Upstream)
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the grant's lease to end unclaimed", func() bool {
		n, err := srv.DoInt(ctx, "EXISTS", name)
		return err == nil && n == 0
	})
	again, err := l.Lock(ctx) // the lock is free and nobody is queued: another owner takes it
	if err != nil {
		t.Fatal(err)
	}
	if px.Read(faultproxy.Upstream) == sent {
		// The waiter sent nothing since the cut: its attempt was in flight. Let everything through and clean up.
		px.Unstall(faultproxy.Both)
		if err := l.Unlock(again); err != nil {
			t.Fatal(err)
		}
		if r := <-waited; r.err == nil {
			_ = waiting.Lock(name).Unlock(r.held)
		}
		return false
	}
	px.Unstall(faultproxy.Upstream) // the refresh runs now: refused, it queues the waiter again
	var entry string
	var deadline int64
	eventually(t, 5*time.Second, "the refresh to queue the waiter again", func() bool {
		e, err := srv.DoStrings(ctx, "LRANGE", queue, "0", "0")
		if err != nil || len(e) != 1 {
			return false
		}
		s, err := srv.DoString(ctx, "ZSCORE", deadlines, e[0])
		d, err2 := strconv.ParseInt(s, 10, 64)
		entry, deadline = e[0], d
		return err == nil && err2 == nil
	})
	px.Unstall(faultproxy.Downstream) // the refusal and the late grant message arrive

	// The waiter either takes the message for a grant (wrong), or attempts once more to claim it, which refreshes
	// its entry's deadline on the server.
	var early *result
	eventually(t, 5*time.Second, "the waiter to act on the late grant message", func() bool {
		select {
		case r := <-waited:
			early = &r
			return true
		default:
		}
		s, err := srv.DoString(ctx, "ZSCORE", deadlines, entry)
		d, err2 := strconv.ParseInt(s, 10, 64)
		return err == nil && err2 == nil && d > deadline
	})
	if early != nil {
		live := early.err == nil && early.held.Err() == nil
		t.Fatalf("the waiter's TryLock returned (%v, held context live: %v) while another owner holds the lock "+
			"(the server: %v)", early.err, live, hgetall(t, srv, name))
	}
	if err := l.Unlock(again); err != nil {
		t.Fatal(err)
	}
	r := <-waited
	if r.err != nil {
		t.Fatalf("the waiter's TryLock = %v, want the lock once the other owner released it", r.err)
	}
	if got := hgetall(t, srv, name); got[mustOwner(t, r.held)] != "1" {
		t.Fatalf("the server holds %v, want the waiter's owner once", got)
	}
	mustUnlock(t, waiting.Lock(name), r.held)
	return true
}

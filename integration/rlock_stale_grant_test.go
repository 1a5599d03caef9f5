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
	ctx := ctxT(t, 30*time.Second)
	px := faultproxy.Start(t, srv.Addr())
	// The waiter's client is behind the proxy, with a response timeout far longer than the withheld replies.
	waiting, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: px.Addr(), ResponseTimeout: 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waiting.Close() })
	other := newLockClient(t, srv, 0)
	warmScripts(t, waiting, ctx)
	warmScripts(t, other, ctx)
	l := other.Lock("sg")
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
		h, err := waiting.Lock("sg").TryLock(ctx, 20*time.Second, lease)
		waited <- result{h, err}
	}()
	eventually(t, 5*time.Second, "the waiter to be queued, told so, and subscribed to its grant channel", func() bool {
		n, err := srv.DoInt(ctx, "LLEN", "locksmith_lock_queue:{sg}")
		ch, err2 := srv.DoStrings(ctx, "PUBSUB", "CHANNELS", "locksmith_lock__channel:{sg}:*")
		return err == nil && err2 == nil && n == 1 && len(ch) == 1 && waiting.Stats().Waiters == 1
	})

	// Everything between the waiter's client and the server is held back: the grant message, and the waiter's
	// next refresh, which is sent after the grant.
	px.Stall(faultproxy.Both)
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the grant's lease to end unclaimed", func() bool {
		n, err := srv.DoInt(ctx, "EXISTS", "sg")
		return err == nil && n == 0
	})
	again, err := l.Lock(ctx) // the lock is free and nobody is queued: another owner takes it
	if err != nil {
		t.Fatal(err)
	}
	px.Unstall(faultproxy.Upstream) // the refresh runs now: refused, it queues the waiter again
	var entry string
	var deadline int64
	eventually(t, 5*time.Second, "the refresh to queue the waiter again", func() bool {
		e, err := srv.DoStrings(ctx, "LRANGE", "locksmith_lock_queue:{sg}", "0", "0")
		if err != nil || len(e) != 1 {
			return false
		}
		s, err := srv.DoString(ctx, "ZSCORE", "locksmith_lock_timeout:{sg}", e[0])
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
		s, err := srv.DoString(ctx, "ZSCORE", "locksmith_lock_timeout:{sg}", entry)
		d, err2 := strconv.ParseInt(s, 10, 64)
		return err == nil && err2 == nil && d > deadline
	})
	if early != nil {
		live := early.err == nil && early.held.Err() == nil
		t.Fatalf("the waiter's TryLock returned (%v, held context live: %v) while another owner holds the lock "+
			"(the server: %v)", early.err, live, hgetall(t, srv, "sg"))
	}
	if err := l.Unlock(again); err != nil {
		t.Fatal(err)
	}
	r := <-waited
	if r.err != nil {
		t.Fatalf("the waiter's TryLock = %v, want the lock once the other owner released it", r.err)
	}
	if got := hgetall(t, srv, "sg"); got[mustOwner(t, r.held)] != "1" {
		t.Fatalf("the server holds %v, want the waiter's owner once", got)
	}
	mustUnlock(t, waiting.Lock("sg"), r.held)
}

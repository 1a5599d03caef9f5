package conn_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// recv waits for one message on ch.
func recv(t *testing.T, ch <-chan conn.Message) conn.Message {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10 s")
		return conn.Message{}
	}
}

// handlerTo returns a handler that forwards messages to a buffered channel without blocking the loop.
func handlerTo(ch chan conn.Message) conn.Handler {
	return func(m conn.Message) {
		select {
		case ch <- m:
		default:
			panic("test handler channel full")
		}
	}
}

func TestSubscribeReceivesPublishedMessages(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr()})
	ctx := ctxT(t)
	msgs := make(chan conn.Message, 16)
	sub, err := c.Subscribe("news", handlerTo(msgs)).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The future completed after the server confirmed: a publish now reaches us.
	if n, err := c.Do(ctx, "PUBLISH", "news", "hello").Get(ctx); err != nil || n.Int != 1 {
		t.Fatalf("PUBLISH = %v, %v; want 1 receiver", n, err)
	}
	m := recv(t, msgs)
	if m.Kind != conn.KindMessage || m.Channel != "news" || m.Payload != "hello" {
		t.Fatalf("message = %+v", m)
	}
	sub.Close()
}

// numsub returns PUBSUB NUMSUB for channel: the server's count of subscribed connections.
func numsub(t *testing.T, srv *redistest.Server, channel string) int64 {
	t.Helper()
	r, err := srv.Do(context.Background(), "PUBSUB", "NUMSUB", channel)
	if err != nil || len(r.Array) != 2 {
		t.Fatalf("PUBSUB NUMSUB = %v, %v", r, err)
	}
	return r.Array[1].Int
}

// commandCalls returns how many times the server ran cmd (INFO commandstats).
func commandCalls(t *testing.T, srv *redistest.Server, cmd string) int {
	t.Helper()
	info, err := srv.Info(context.Background(), "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	stat := info["cmdstat_"+cmd]
	v, _, _ := strings.Cut(strings.TrimPrefix(stat, "calls="), ",")
	n, _ := strconv.Atoi(v)
	return n
}

// Subscriptions are counted per channel: the second handler sends nothing and completes at once; closing one of
// two keeps the server subscription; closing the last sends UNSUBSCRIBE.
func TestSubscribeIsReferenceCounted(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr()})
	ctx := ctxT(t)
	a, b := make(chan conn.Message, 8), make(chan conn.Message, 8)
	subA, err := c.Subscribe("rc", handlerTo(a)).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	subB, err := c.Subscribe("rc", handlerTo(b)).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := commandCalls(t, srv, "subscribe"); n != 1 {
		t.Fatalf("SUBSCRIBE ran %d times; want 1", n)
	}
	if _, err := c.Do(ctx, "PUBLISH", "rc", "1").Get(ctx); err != nil {
		t.Fatal(err)
	}
	if recv(t, a).Payload != "1" || recv(t, b).Payload != "1" {
		t.Fatal("both handlers must receive the message")
	}

	subA.Close()
	subA.Close() // idempotent
	if _, err := c.Do(ctx, "PUBLISH", "rc", "2").Get(ctx); err != nil {
		t.Fatal(err)
	}
	if recv(t, b).Payload != "2" {
		t.Fatal("the remaining handler must receive the message")
	}
	select {
	case m := <-a:
		t.Fatalf("closed subscription received %+v", m)
	default:
	}
	if n := numsub(t, srv, "rc"); n != 1 {
		t.Fatalf("NUMSUB = %d after closing one of two handlers; want 1", n)
	}

	subB.Close()
	// UNSUBSCRIBE is queued by Close; a round trip on the pub/sub connection (a new SUBSCRIBE confirmed after it)
	// proves it was processed.
	if _, err := c.Subscribe("other", func(conn.Message) {}).Get(ctx); err != nil {
		t.Fatal(err)
	}
	if n := numsub(t, srv, "rc"); n != 0 {
		t.Fatalf("NUMSUB = %d after closing the last handler; want 0", n)
	}
	if n := commandCalls(t, srv, "unsubscribe"); n != 1 {
		t.Fatalf("UNSUBSCRIBE ran %d times; want 1", n)
	}
}

// After the pub/sub connection is killed, the client reconnects, subscribes every channel again and tells each
// handler KindResubscribed; messages flow again.
func TestResubscribeAfterClientKillTypePubsub(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr()})
	ctx := ctxT(t)
	chans := []string{"r1", "r2", "r3"}
	msgs := map[string]chan conn.Message{}
	for _, ch := range chans {
		msgs[ch] = make(chan conn.Message, 8)
		if _, err := c.Subscribe(ch, handlerTo(msgs[ch])).Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := srv.DoInt(ctx, "CLIENT", "KILL", "TYPE", "pubsub"); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL TYPE pubsub = %d, %v; want 1", n, err)
	}
	for _, ch := range chans {
		if m := recv(t, msgs[ch]); m.Kind != conn.KindResubscribed || m.Channel != ch {
			t.Fatalf("first event on %s after the kill = %+v; want KindResubscribed", ch, m)
		}
		if n := numsub(t, srv, ch); n != 1 {
			t.Fatalf("NUMSUB %s = %d after resubscription; want 1", ch, n)
		}
		if _, err := c.Do(ctx, "PUBLISH", ch, "again").Get(ctx); err != nil {
			t.Fatal(err)
		}
		if m := recv(t, msgs[ch]); m.Kind != conn.KindMessage || m.Payload != "again" {
			t.Fatalf("message on %s after resubscription = %+v", ch, m)
		}
	}
	// A new handler on an existing channel after the reconnect completes at once.
	if _, err := c.Subscribe("r1", func(conn.Message) {}).Get(ctx); err != nil {
		t.Fatal(err)
	}
}

// While the pub/sub connection is down (the server is dead), Subscribe fails fast; once the server is back the
// channel is subscribed again.
func TestSubscribeWhileServerDownFailsFastThenRecovers(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr(), ReconnectMaxBackoff: 200 * time.Millisecond})
	ctx := ctxT(t)
	msgs := make(chan conn.Message, 8)
	if _, err := c.Subscribe("d", handlerTo(msgs)).Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		_, err := c.Subscribe("d2", func(conn.Message) {}).Get(ctx)
		if errors.Is(err, conn.ErrUnavailable) {
			return nil
		}
		return fmt.Errorf("Subscribe while the server is down: %v; want ErrUnavailable", err)
	})
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, msgs); m.Kind != conn.KindResubscribed {
		t.Fatalf("event after the restart = %+v; want KindResubscribed", m)
	}
	// The command connections reconnect on their own schedule; until then PUBLISH fails fast.
	eventually(t, func() error {
		_, err := c.Do(ctx, "PUBLISH", "d", "back").Get(ctx)
		if err != nil && !errors.Is(err, conn.ErrUnavailable) {
			t.Fatalf("PUBLISH after the restart: %v", err)
		}
		return err
	})
	if m := recv(t, msgs); m.Payload != "back" {
		t.Fatalf("message = %+v", m)
	}
}

// A handler that panics is recovered; the loop keeps delivering to the others.
func TestPanickingHandlerDoesNotStopDelivery(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr()})
	ctx := ctxT(t)
	msgs := make(chan conn.Message, 8)
	if _, err := c.Subscribe("p", func(conn.Message) { panic("handler bug") }).Get(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscribe("p", handlerTo(msgs)).Get(ctx); err != nil {
		t.Fatal(err)
	}
	for _, payload := range []string{"1", "2"} {
		if _, err := c.Do(ctx, "PUBLISH", "p", payload).Get(ctx); err != nil {
			t.Fatal(err)
		}
		if m := recv(t, msgs); m.Payload != payload {
			t.Fatalf("message = %+v; want %s", m, payload)
		}
	}
}

package conn_test

import (
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

package redisadmin

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

func TestDoReturnsEveryReplyKindFromARealServer(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	if v, err := c.Do(ctx, "PING"); err != nil || v != "PONG" {
		t.Fatalf("PING = %v, %v", v, err)
	}
	if v, err := c.Do(ctx, "INCRBY", "n", "41"); err != nil || v != int64(41) {
		t.Fatalf("INCRBY = %#v, %v", v, err)
	}
	if v, err := c.Do(ctx, "GET", "missing"); err != nil || v != nil {
		t.Fatalf("GET missing = %#v, %v", v, err)
	}
	if _, err := c.Do(ctx, "RPUSH", "l", "a", "b\r\nc"); err != nil {
		t.Fatal(err)
	}
	v, err := c.Do(ctx, "LRANGE", "l", "0", "-1")
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := v.([]any); !ok || len(l) != 2 || l[0] != "a" || l[1] != "b\r\nc" {
		t.Fatalf("LRANGE = %#v", v)
	}
	if _, err := c.Do(ctx, "NOSUCHCOMMAND"); !errors.Is(err, ErrReply) {
		t.Fatalf("unknown command: err = %v, want ErrReply", err)
	}
	// The connection is still in step after an error reply.
	if s, err := c.String(ctx, "ECHO", "still here"); err != nil || s != "still here" {
		t.Fatalf("ECHO = %q, %v", s, err)
	}
	if _, err := c.String(ctx, "INCR", "n"); err == nil {
		t.Fatal("String accepted an integer reply")
	}
}

func TestReceiveReadsWhatASubscriptionIsSent(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := sub.Do(ctx, "SUBSCRIBE", "ch"); err != nil {
		t.Fatal(err)
	}
	if n, err := srv.DoInt(ctx, "PUBLISH", "ch", "hello"); err != nil || n != 1 {
		t.Fatalf("PUBLISH = %d, %v; want 1 subscriber", n, err)
	}
	v, err := sub.Receive(ctx)
	if m, ok := v.([]any); err != nil || !ok || len(m) != 3 || m[0] != "message" || m[1] != "ch" || m[2] != "hello" {
		t.Fatalf("Receive = %#v, %v; want the message", v, err)
	}
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if _, err := sub.Receive(short); err == nil {
		t.Fatal("Receive with nothing sent returned no error at its deadline")
	}
}

package conn_test

import (
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// bulk encodes s as a RESP2 bulk string.
func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// pubsubClient connects a client with one pooled connection to f; rec hears its events. The fake answers PING
// itself, which must not land in the middle of a message relayed to the pub/sub connection: no idle PING. The
// reconnect backoff is short, and ReconnectMaxBackoff (how long a connection must live for its loss to be
// replaced at once) keeps its 2 s default, far above a hostile reply's few milliseconds.
func pubsubClient(t *testing.T, f *fakeServer, rec *eventLog) *conn.Client {
	return newClient(t, conn.Config{Addr: f.addr(), PoolSize: 1, DisableLatencyLane: true, PingInterval: -1,
		ReconnectMinBackoff: 10 * time.Millisecond, OnEvent: rec.add})
}

// checkDelivered publishes a message on ch through c and waits for it in msgs: the pub/sub connection is
// subscribed on the real server behind the fake.
func checkDelivered(t *testing.T, c *conn.Client, ch string, msgs <-chan conn.Message) {
	t.Helper()
	ctx := ctxT(t)
	if n, err := c.Do(ctx, "PUBLISH", ch, "after").Get(ctx); err != nil || n.Int != 1 {
		t.Fatalf("PUBLISH after the hostile reply = %v, %v; want 1 subscriber on the real server", n, err)
	}
	if m := recv(t, msgs); m.Kind != conn.KindMessage || m.Channel != ch || m.Payload != "after" {
		t.Fatalf("message after the hostile reply = %+v", m)
	}
}

// A published message whose payload is a hostile reply closes the pub/sub connection with a *resp.LimitError,
// which the subscriber learns from Config.OnEvent (EventLost, role pubsub): a pushed message fails no call. The
// heap's peak stays within heapBound (nestedLineBound for the endless line); the connection is re-made at once and
// the channel subscribed again on the real server behind the fake, so the handler is told KindResubscribed, then
// receives what is published next.
func TestHostileMessageOnASubscribedChannel(t *testing.T) {
	srv := redistest.Start(t)
	for _, hc := range hostileCases {
		t.Run(hc.name, func(t *testing.T) {
			forward := relay(t, srv.Addr())
			subscriber := make(chan net.Conn, 1)
			var first atomic.Bool
			f := startFake(t, func(i int, cmd []string, c net.Conn) bool {
				switch {
				case cmd[0] == "SUBSCRIBE" && first.CompareAndSwap(false, true):
					// The fake confirms the first subscription itself, and keeps the connection for the message.
					subscriber <- c
					return reply(c, "*3\r\n"+bulk("subscribe")+bulk(cmd[1])+":1\r\n")
				case cmd[0] == "PUBLISH" && cmd[2] == "hostile":
					// The message goes out on the pub/sub connection (idle: the client sends nothing else there);
					// PUBLISH is answered once the client has closed it.
					streamHostile(<-subscriber, "*3\r\n"+bulk("message")+bulk(cmd[1])+hc.head, hc.chunk)
					return reply(c, ":1\r\n")
				}
				return forward(i, cmd, c)
			})
			rec := newEventLog()
			c := pubsubClient(t, f, rec)
			ctx := ctxT(t)
			msgs := make(chan conn.Message, 4)
			if _, err := c.Subscribe("ch", handlerTo(msgs)).Get(ctx); err != nil {
				t.Fatalf("Subscribe: %v", err)
			}

			rec.mark()
			stop := heapPeak()
			start := time.Now()
			pub := c.Do(ctx, "PUBLISH", "ch", "hostile")
			lost := rec.expect(t, conn.EventLost, conn.RolePubSub, 10*time.Second)
			grew := stop()
			bound := int64(heapBound)
			if hc.limit == "MaxLineLen" {
				bound = nestedLineBound // the payload is a line inside the message's array
			}
			checkRefused(t, lost.Err, hc.limit, lost.Time.Sub(start), grew, bound)
			if _, err := pub.Get(ctx); err != nil {
				t.Fatalf("the hostile PUBLISH: %v", err)
			}

			if m := recv(t, msgs); m.Kind != conn.KindResubscribed || m.Channel != "ch" {
				t.Fatalf("first event after the hostile message = %+v; want KindResubscribed on ch", m)
			}
			rec.expect(t, conn.EventResubscribed, conn.RolePubSub, 10*time.Second)
			checkDelivered(t, c, "ch", msgs)
		})
	}
}

// A hostile reply in place of SUBSCRIBE's confirmation closes the pub/sub connection (EventLost with the
// *resp.LimitError). The connection is replaced at once after its first loss, and the waiting subscription moves
// to the replacement before the lost one's commands fail: when the replacement confirms, Subscribe succeeds as if
// nothing happened. When the replacement is answered with a hostile reply too, the next attempt waits for the
// reconnect backoff, so the subscription fails with the typed error; a later Subscribe succeeds once the server
// answers. Either way the heap's peak stays within heapBound per refused reply.
func TestHostileSubscribeConfirmation(t *testing.T) {
	srv := redistest.Start(t)
	for _, hc := range hostileCases {
		for _, hostile := range []int32{1, 2} {
			t.Run(hc.name+"/"+strconv.Itoa(int(hostile))+" hostile", func(t *testing.T) {
				forward := relay(t, srv.Addr())
				var left atomic.Int32
				left.Store(hostile)
				f := startFake(t, func(i int, cmd []string, c net.Conn) bool {
					if cmd[0] == "SUBSCRIBE" && left.Add(-1) >= 0 {
						return streamHostile(c, hc.head, hc.chunk)
					}
					return forward(i, cmd, c)
				})
				rec := newEventLog()
				c := pubsubClient(t, f, rec)
				ctx := ctxT(t)
				msgs := make(chan conn.Message, 4)

				stop := heapPeak()
				start := time.Now()
				_, err := c.Subscribe("ch", handlerTo(msgs)).Get(ctx)
				took := time.Since(start)
				grew := stop()
				lost := rec.expect(t, conn.EventLost, conn.RolePubSub, 10*time.Second)
				checkRefused(t, lost.Err, hc.limit, lost.Time.Sub(start), grew, int64(hostile)*heapBound)
				if hostile == 1 {
					if err != nil {
						t.Fatalf("Subscribe with one hostile confirmation: %v; want it to succeed on the replacement", err)
					}
					t.Logf("Subscribe succeeded after %v", took.Round(time.Millisecond))
				} else {
					checkRefused(t, err, hc.limit, took, grew, int64(hostile)*heapBound)
					eventually(t, func() error {
						_, err := c.Subscribe("ch", handlerTo(msgs)).Get(ctx)
						return err
					})
				}
				if n := rec.count(conn.EventLost, conn.RolePubSub); n != int(hostile) {
					t.Errorf("%d pub/sub connections lost; want %d", n, hostile)
				}
				checkDelivered(t, c, "ch", msgs)
			})
		}
	}
}

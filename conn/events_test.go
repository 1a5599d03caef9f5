package conn_test

import (
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// eventLog records what Config.OnEvent is told, for expect to wait on.
type eventLog struct {
	mu     sync.Mutex
	evs    []conn.Event
	from   int           // expect looks at events from this index on (mark)
	notify chan struct{} // capacity 1: an event came
}

func newEventLog() *eventLog { return &eventLog{notify: make(chan struct{}, 1)} }

func (l *eventLog) add(ev conn.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

// mark makes expect look only at the events that come from now on.
func (l *eventLog) mark() {
	l.mu.Lock()
	l.from = len(l.evs)
	l.mu.Unlock()
}

// expect waits for an event of kind and role (any role when "") since the last mark, and returns it.
func (l *eventLog) expect(t *testing.T, kind conn.EventKind, role string, within time.Duration) conn.Event {
	t.Helper()
	deadline := time.After(within)
	for {
		l.mu.Lock()
		for _, ev := range l.evs[l.from:] {
			if ev.Kind == kind && (role == "" || ev.Role == role) {
				l.mu.Unlock()
				if ev.Time.IsZero() {
					t.Fatalf("event %+v has no time", ev)
				}
				return ev
			}
		}
		l.mu.Unlock()
		select {
		case <-l.notify:
		case <-deadline:
			t.Fatalf("no %v event (role %q) within %v", kind, role, within)
		}
	}
}

// count returns how many events of kind and role (any role when "") came since the last mark.
func (l *eventLog) count(kind conn.EventKind, role string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.evs[l.from:] {
		if ev.Kind == kind && (role == "" || ev.Role == role) {
			n++
		}
	}
	return n
}

// before checks that, since the last mark, the first event of kind a for role came before the first of kind b.
func (l *eventLog) before(t *testing.T, a, b conn.EventKind, role string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range l.evs[l.from:] {
		if ev.Role != role {
			continue
		}
		switch ev.Kind {
		case a:
			return
		case b:
			t.Fatalf("%v came before %v for %s: %v", b, a, role, l.evs[l.from:])
		}
	}
}

// Connected, lost and reconnected for the command and pub/sub connections, and resubscribed, against a real
// redis-server: its pub/sub connection killed with CLIENT KILL TYPE pubsub, then the server killed and restarted.
func TestEventsOfConnectionsLostAndRegained(t *testing.T) {
	srv := redistest.Start(t)
	rec := newEventLog()
	c := newClient(t, conn.Config{Addr: srv.Addr(), PoolSize: 1, OnEvent: rec.add,
		ReconnectMinBackoff: 10 * time.Millisecond, ReconnectMaxBackoff: 100 * time.Millisecond})
	ctx := ctxT(t)
	if ev := rec.expect(t, conn.EventConnected, conn.RoleCommand, 5*time.Second); ev.Addr != srv.Addr() || ev.Err != nil {
		t.Fatalf("connected event %+v", ev)
	}
	if _, err := c.Subscribe("ch", func(conn.Message) {}).Get(ctx); err != nil {
		t.Fatal(err)
	}
	rec.expect(t, conn.EventConnected, conn.RolePubSub, 5*time.Second)

	rec.mark()
	if _, err := srv.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
		t.Fatal(err)
	}
	if ev := rec.expect(t, conn.EventLost, conn.RolePubSub, 5*time.Second); ev.Err == nil || ev.Addr != srv.Addr() {
		t.Fatalf("lost event %+v; want the error and the address", ev)
	}
	rec.expect(t, conn.EventReconnected, conn.RolePubSub, 5*time.Second)
	if ev := rec.expect(t, conn.EventResubscribed, conn.RolePubSub, 5*time.Second); ev.Addr != srv.Addr() {
		t.Fatalf("resubscribed event %+v", ev)
	}
	rec.before(t, conn.EventLost, conn.EventReconnected, conn.RolePubSub)

	rec.mark()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if ev := rec.expect(t, conn.EventLost, conn.RoleCommand, 5*time.Second); ev.Err == nil {
		t.Fatalf("lost event %+v without its error", ev)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	rec.expect(t, conn.EventReconnected, conn.RoleCommand, 10*time.Second)
	rec.expect(t, conn.EventResubscribed, conn.RolePubSub, 10*time.Second)
	rec.before(t, conn.EventLost, conn.EventReconnected, conn.RoleCommand)
	if v, err := c.Do(ctx, "PING").Get(ctx); err != nil || v.Str != "PONG" {
		t.Fatalf("PING after the restart = %v, %v", v, err)
	}
}

// A Sentinel failover gives EventFailover from the old master to the new one.
func TestEventFailoverOnSentinelSwitch(t *testing.T) {
	rs := redistest.StartReplicaSet(t)
	rec := newEventLog()
	newClient(t, conn.Config{SentinelAddrs: rs.SentinelAddrs(), MasterName: rs.MasterName(), OnEvent: rec.add})
	ctx := ctxT(t)
	old, promoted, err := rs.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev := rec.expect(t, conn.EventFailover, "", 10*time.Second); ev.Prev != old.Addr() || ev.Addr != promoted.Addr() {
		t.Fatalf("failover event %+v; want %s -> %s", ev, old.Addr(), promoted.Addr())
	}
}

// A panicking hook does not take the Client down.
func TestEventHookPanicIsRecovered(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr(), OnEvent: func(conn.Event) { panic("hook bug") }})
	ctx := ctxT(t)
	if _, err := c.Do(ctx, "PING").Get(ctx); err != nil {
		t.Fatal(err)
	}
}

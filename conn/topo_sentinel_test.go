package conn_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/faultproxy"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// TestSentinel runs a Sentinel Client against a master, two replicas and three Sentinels: discovery (Config and
// URL), WAIT through SendAndWait, a crash of the master under load, then a graceful failover.
func TestSentinel(t *testing.T) {
	rs := redistest.StartReplicaSet(t)
	// Refresh every 100 ms, so that Sentinel queries run throughout the failovers: a query answered by a Sentinel
	// that has not heard of the failover yet must not move the client back (switches counts the moves). One
	// Sentinel (not the one that leads the graceful failover) answers 300 ms late, so that a query is nearly always
	// in flight when the failover is announced: its answers, older than the announcement, must not move the client
	// back either.
	addrs := rs.SentinelAddrs()
	slow := faultproxy.Start(t, addrs[len(addrs)-1])
	slow.SetLatency(faultproxy.Downstream, 300*time.Millisecond)
	addrs[len(addrs)-1] = slow.Addr()
	var switches atomic.Int32
	c := newClient(t, conn.Config{SentinelAddrs: addrs, MasterName: rs.MasterName(),
		TopologyRefreshInterval: 100 * time.Millisecond,
		Logger:                  slog.New(countingHandler{Handler: slog.DiscardHandler, substr: "master switched", n: &switches})})

	t.Run("discovery", func(t *testing.T) { testSentinelDiscovery(t, rs, c) })
	t.Run("SendAndWait", func(t *testing.T) { testSentinelWait(t, c) })
	// The crash first: after a graceful failover the old master keeps role master until the Sentinels convert it,
	// 10-16 s later (redistest's Rejoin doc), and the set is not healthy before.
	t.Run("master killed", func(t *testing.T) { testSentinelSwitch(t, rs, c, &switches, true) })
	t.Run("graceful failover", func(t *testing.T) { testSentinelSwitch(t, rs, c, &switches, false) })
}

func testSentinelDiscovery(t *testing.T, rs *redistest.ReplicaSet, c *conn.Client) {
	ctx := ctxT(t)
	master, err := rs.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "SET", "disc", "1").Get(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := master.DoString(ctx, "GET", "disc"); err != nil || v != "1" {
		t.Fatalf("GET on the master = %q, %v: the Client did not write to it", v, err)
	}
	if c.IsCluster() || c.PublishCommand() != "publish" {
		t.Fatalf("IsCluster %v, PublishCommand %q", c.IsCluster(), c.PublishCommand())
	}

	// The URL form, with the first Sentinel address unreachable: the next one answers.
	dead := "127.0.0.1:1"
	cfg, err := conn.ParseURL("redis-sentinel://" + strings.Join(append([]string{dead}, rs.SentinelAddrs()...), ",") +
		"/" + rs.MasterName() + "?db=3&pool_size=1")
	if err != nil {
		t.Fatal(err)
	}
	u := newClient(t, cfg)
	if v, err := u.Do(ctx, "CLIENT", "INFO").Get(ctx); err != nil || !strings.Contains(v.Str, " db=3 ") ||
		!strings.Contains(v.Str, "laddr=") {
		t.Fatalf("CLIENT INFO through the URL client = %v, %v", v, err)
	}

	// A master name the Sentinels do not know fails New, naming the name.
	_, err = conn.New(conn.Config{SentinelAddrs: rs.SentinelAddrs(), MasterName: "nosuch", DialTimeout: time.Second})
	if !errors.Is(err, conn.ErrUnavailable) || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Fatalf("New with an unknown master name: err = %v", err)
	}
}

// testSentinelWait: SendAndWait sends the command and WAIT together; both replicas acknowledge.
func testSentinelWait(t *testing.T, c *conn.Client) {
	ctx := ctxT(t)
	f := c.SendAndWait(ctx, conn.Cmd{Script: benchAcquire, Keys: []string{"waited"}, Args: []string{"30000", "o:1"}}, 2, time.Second)
	r, err := f.Get(ctx)
	if err != nil || r.WaitErr != nil || r.Replicas != 2 || !r.Reply.Null {
		t.Fatalf("SendAndWait = %+v, %v; want the acquire's nil reply and 2 replicas", r, err)
	}
}

// testSentinelSwitch moves the master (SENTINEL FAILOVER, or SIGKILL) under an EVALSHA load with a subscription
// open: the client serves again within 5 s (killed) on the new master, every future ends and callers see only
// *ConnError, and the subscription comes back on the new master (KindResubscribed) and receives messages.
func testSentinelSwitch(t *testing.T, rs *redistest.ReplicaSet, c *conn.Client, switches *atomic.Int32, kill bool) {
	ctx := ctxT(t)
	if err := rs.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	channel := "redisson_lock__channel:{sw" + strconv.FormatBool(kill) + "}"
	msgs := make(messages, 64)
	sub, err := c.Subscribe(channel, msgs.handler).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	old, err := rs.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	load := startFailoverLoad(t, c, 32, func(i int) string { return "sw:" + strconv.Itoa(i) }, "sw:probe")
	load.waitPairs(500)
	switchesBefore := switches.Load()
	watch := watchPromotion(t, func(ctx context.Context) *redistest.Server {
		for _, s := range rs.Sentinels() {
			addr, err := s.DoStrings(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", rs.MasterName())
			if err != nil || len(addr) != 2 || addr[1] == strconv.Itoa(old.Port()) {
				continue
			}
			for _, n := range rs.Nodes() {
				if strconv.Itoa(n.Port()) == addr[1] {
					return n
				}
			}
		}
		return nil
	})
	start := time.Now()
	if kill {
		err = old.Kill()
	} else {
		_, _, err = rs.Failover(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	done := time.Now()
	var rec time.Duration
	eventually(t, func() error {
		var ok bool
		if rec, ok = load.recovery(start, done); !ok {
			return errors.New("no probe issued after the kill (or the failover) has succeeded")
		}
		return nil
	})
	promotedAt, promoted := watch.wait(t)
	load.waitPairs(500)
	load.finish()
	lag := rec - promotedAt.Sub(start)
	t.Logf("recovery: served again %v after the failover began; a Sentinel named the new master after %v (client lag %v)",
		rec, promotedAt.Sub(start), lag)
	if lag > time.Second {
		t.Errorf("the client served %v after the promotion, want within 1 s", lag)
	}
	if kill && rec > 5*time.Second {
		t.Errorf("recovery took %v after the kill, want within 5 s", rec)
	}
	if v, err := promoted.DoString(ctx, "GET", "sw:probe"); err != nil || v != "x" {
		t.Fatalf("the probe key on the new master = %q, %v", v, err)
	}
	msgs.expect(t, conn.KindResubscribed, "", 5*time.Second)
	if chans, err := promoted.DoStrings(ctx, "PUBSUB", "CHANNELS"); err != nil || !slices.Contains(chans, channel) {
		t.Fatalf("PUBSUB CHANNELS on the new master = %v, %v", chans, err)
	}
	if _, err := c.Do(ctx, "PUBLISH", channel, "after").Get(ctx); err != nil {
		t.Fatal(err)
	}
	msgs.expect(t, conn.KindMessage, "after", 5*time.Second)
	if n := switches.Load() - switchesBefore; n != 1 {
		t.Fatalf("the client moved %d times during one failover, want once", n)
	}
}

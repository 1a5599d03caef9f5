package conn_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// failoverLoad runs EVALSHA acquire/release pairs from many goroutines during a failover and checks the contract:
// every future ends (none hangs), and the only errors callers see are *ConnError (the command was in flight on
// the dead master, or could not be sent within RetryTimeout). A probe measures when the client serves again.
type failoverLoad struct {
	t     *testing.T
	c     *conn.Client
	stop  atomic.Bool
	wg    sync.WaitGroup
	pairs atomic.Int64

	mu        sync.Mutex
	connErrs  map[string]int // by error text class
	otherErr  error
	hung      string
	probeOK   [][2]time.Time // issue and completion times of the probe's successes
	probeFail []error
}

// startFailoverLoad starts g workers on keys made by key(i), and a probe writing probeKey every 10 ms.
func startFailoverLoad(t *testing.T, c *conn.Client, g int, key func(i int) string, probeKey string) *failoverLoad {
	l := &failoverLoad{t: t, c: c, connErrs: map[string]int{}}
	for i := range g {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			k, owner := key(i), "owner:"+strconv.Itoa(i)
			for !l.stop.Load() {
				if l.check(c.Eval(context.Background(), benchAcquire, []string{k}, "30000", owner).Get) != nil {
					continue
				}
				if l.check(c.Eval(context.Background(), benchRelease, []string{k, k + ":ch"}, "0", "30000", owner).Get) == nil {
					l.pairs.Add(1)
				}
			}
		}()
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for !l.stop.Load() {
			issued := time.Now()
			_, err := c.Do(context.Background(), "SET", probeKey, "x").Get(context.Background())
			l.mu.Lock()
			if err == nil {
				l.probeOK = append(l.probeOK, [2]time.Time{issued, time.Now()})
			} else {
				l.probeFail = append(l.probeFail, err)
			}
			l.mu.Unlock()
			time.Sleep(10 * time.Millisecond) // the probe's pace, not a synchronisation
		}
	}()
	return l
}

// check waits for one future with a bound far above every retry and timeout of the client: a future still
// pending after it hangs. It records the error class and returns the error.
func (l *failoverLoad) check(get func(context.Context) (resp.Value, error)) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err := get(ctx)
	if err == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var ce *conn.ConnError
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		l.hung = "a future did not complete within 15 s"
	case errors.As(err, &ce) && errors.Is(err, conn.ErrConnLost):
		l.connErrs[fmt.Sprintf("ErrConnLost (%s)", ce.Op)]++
	case errors.As(err, &ce) && errors.Is(err, conn.ErrUnavailable):
		l.connErrs[fmt.Sprintf("ErrUnavailable (%s)", ce.Op)]++
	default:
		if l.otherErr == nil {
			l.otherErr = err
		}
	}
	return err
}

// waitPairs waits until n more pairs completed.
func (l *failoverLoad) waitPairs(n int64) {
	target := l.pairs.Load() + n
	eventually(l.t, func() error {
		if l.pairs.Load() < target {
			return fmt.Errorf("%d of %d pairs", l.pairs.Load(), target)
		}
		return nil
	})
}

// recovery returns the time from since to the completion of the first successful probe issued after issuedAfter
// (the kill's return: the server was dead by then).
func (l *failoverLoad) recovery(since, issuedAfter time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := slices.IndexFunc(l.probeOK, func(t [2]time.Time) bool { return t[0].After(issuedAfter) })
	if i < 0 {
		return 0, false
	}
	return l.probeOK[i][1].Sub(since), true
}

// finish stops the load and checks the contract.
func (l *failoverLoad) finish() {
	l.stop.Store(true)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hung != "" {
		l.t.Fatal(l.hung)
	}
	if l.otherErr != nil {
		l.t.Fatalf("a caller got an error that is not a *ConnError: %v", l.otherErr)
	}
	l.t.Logf("%d pairs; connection errors seen by callers: %v; probe failures: %d", l.pairs.Load(), l.connErrs, len(l.probeFail))
}

// promotionWatch polls every 5 ms for the moment the servers' failover is visible to a client (found returns the
// new master, or nil): a cluster replica's ROLE saying master, or a Sentinel naming the new master. The client's own
// lag is measured from there.
type promotionWatch struct {
	done chan struct{}
	at   time.Time
	who  *redistest.Server
}

func watchPromotion(t *testing.T, found func(ctx context.Context) *redistest.Server) *promotionWatch {
	w := &promotionWatch{done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(w.done)
		for ctx.Err() == nil {
			if s := found(ctx); s != nil {
				w.at, w.who = time.Now(), s
				return
			}
			time.Sleep(5 * time.Millisecond) // polling pace: these changes announce nothing we can wait on
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return w
}

// wait returns when and which candidate became master.
func (w *promotionWatch) wait(t *testing.T) (time.Time, *redistest.Server) {
	t.Helper()
	<-w.done
	if w.who == nil {
		t.Fatal("no new master within 30 s")
	}
	return w.at, w.who
}

// messages collects a subscription's messages.
type messages chan conn.Message

func (m messages) handler(msg conn.Message) {
	select {
	case m <- msg:
	default:
	}
}

// expect waits for a message of kind (with payload, for KindMessage).
func (m messages) expect(t *testing.T, kind conn.MessageKind, payload string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case got := <-m:
			if got.Kind == kind && (kind != conn.KindMessage || got.Payload == payload) {
				return
			}
		case <-deadline:
			t.Fatalf("no message of kind %d (payload %q) within %v", kind, payload, within)
		}
	}
}

// TestClusterMasterKilled kills the master of a slot under an EVALSHA load over every slot: the client serves
// that slot again within 5 s of the kill, every future ends (in-flight ones with a *ConnError), an EventFailover
// names the old and the new master, and a sharded subscription on the slot comes back on the promoted replica
// (KindResubscribed) and receives messages.
func TestClusterMasterKilled(t *testing.T) {
	// cluster-node-timeout 1 s (redistest's default is 2 s): the servers' failover then takes 2-3 s here instead of
	// 3.8-4.8 s, which leaves the 5 s bound to the client rather than to the machine's load.
	cl := redistest.StartCluster(t, redistest.WithClusterNodeTimeout(time.Second))
	ctx := ctxT(t)
	evs := newEventLog()
	c := newClient(t, conn.Config{ClusterAddrs: cl.Addrs(), OnEvent: evs.add})
	if got := c.PublishCommand(); got != "spublish" {
		t.Fatalf("PublishCommand = %q on Redis 7; want spublish", got)
	}
	channel := "redisson_lock__channel:{victim}"
	slot := conn.KeySlot(channel)
	victim, err := cl.NodeForSlot(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	msgs := make(messages, 64)
	if _, err := c.Subscribe(channel, msgs.handler).Get(ctx); err != nil {
		t.Fatal(err)
	}
	if chans, err := victim.DoStrings(ctx, "PUBSUB", "SHARDCHANNELS"); err != nil || !slices.Contains(chans, channel) {
		t.Fatalf("PUBSUB SHARDCHANNELS on the slot's master = %v, %v; want the channel (SSUBSCRIBE)", chans, err)
	}
	if _, err := c.Do(ctx, "SPUBLISH", channel, "before").Get(ctx); err != nil {
		t.Fatal(err)
	}
	msgs.expect(t, conn.KindMessage, "before", 5*time.Second)

	var replica []*redistest.Server
	for _, s := range cl.Nodes() {
		if info, err := s.Info(ctx, "replication"); err == nil && info["role"] == "slave" && info["master_port"] == strconv.Itoa(victim.Port()) {
			replica = append(replica, s)
		}
	}
	if len(replica) != 1 {
		t.Fatalf("%d replicas of the victim", len(replica))
	}
	load := startFailoverLoad(t, c, 64, func(i int) string { return "{k" + strconv.Itoa(i) + "}" }, "{victim}probe")
	load.waitPairs(1000)
	watch := watchPromotion(t, func(ctx context.Context) *redistest.Server {
		if r, err := replica[0].Do(ctx, "ROLE"); err == nil && len(r.Array) > 0 && r.Array[0].Str == "master" {
			return replica[0]
		}
		return nil
	})
	killedAt := time.Now()
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	dead := time.Now()
	var rec time.Duration
	eventually(t, func() error {
		var ok bool
		if rec, ok = load.recovery(killedAt, dead); !ok {
			return errors.New("no probe issued after the kill has succeeded")
		}
		return nil
	})
	promotedAt, promoted := watch.wait(t)
	lag := rec - promotedAt.Sub(killedAt)
	t.Logf("recovery: the slot was served again %v after the kill; the replica said master after %v (client lag %v)",
		rec, promotedAt.Sub(killedAt), lag)
	if lag > time.Second {
		t.Errorf("the client served %v after the promotion, want within 1 s", lag)
	}
	if rec > 5*time.Second {
		t.Errorf("recovery took %v, want within 5 s", rec)
	}
	load.waitPairs(1000)
	load.finish()

	if ev := evs.expect(t, conn.EventFailover, "", 5*time.Second); ev.Prev != victim.Addr() || ev.Addr != replica[0].Addr() {
		t.Fatalf("failover event %+v; want %s -> %s", ev, victim.Addr(), replica[0].Addr())
	}
	msgs.expect(t, conn.KindResubscribed, "", 5*time.Second)
	if chans, err := promoted.DoStrings(ctx, "PUBSUB", "SHARDCHANNELS"); err != nil || !slices.Contains(chans, channel) {
		t.Fatalf("PUBSUB SHARDCHANNELS on the promoted master = %v, %v", chans, err)
	}
	if _, err := c.Do(ctx, "SPUBLISH", channel, "after").Get(ctx); err != nil {
		t.Fatal(err)
	}
	msgs.expect(t, conn.KindMessage, "after", 5*time.Second)
}

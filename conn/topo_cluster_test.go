package conn_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// TestClusterRoutesEveryCommandToItsSlotOwner writes keys spread over all slots through one seed and checks that
// each landed on the master serving its slot, that no server had to redirect the client (its map is right from
// the start), and that keyless commands, scripts, DoKey, pipelines and cross-slot keys behave as documented.
func TestClusterRoutesEveryCommandToItsSlotOwner(t *testing.T) {
	cl := redistest.StartCluster(t)
	ctx := ctxT(t)
	c := newClient(t, conn.Config{ClusterAddrs: cl.Addrs()[:1]})
	if !c.IsCluster() {
		t.Fatal("IsCluster() = false")
	}
	masters, err := cl.Masters(ctx)
	if err != nil || len(masters) != 3 {
		t.Fatalf("Masters = %v, %v", masters, err)
	}
	movedBefore := 0
	for _, m := range masters {
		movedBefore += errorCount(t, ctx, m, "MOVED")
	}

	const n = 120
	futs := make([]*future.Future[resp.Value], 0, 2*n)
	for i := range n {
		k := "route:" + strconv.Itoa(i)
		futs = append(futs, c.Do(ctx, "SET", k, strconv.Itoa(i)))
		futs = append(futs, c.Eval(ctx, benchAcquire, []string{"lock:" + k}, "30000", "owner:1"))
	}
	for i, f := range futs {
		if _, err := f.Get(ctx); err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
	}
	perMaster := map[*redistest.Server]int{}
	for i := range n {
		k := "route:" + strconv.Itoa(i)
		owner, err := cl.NodeForKey(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		perMaster[owner]++
		if v, err := owner.DoString(ctx, "GET", k); err != nil || v != strconv.Itoa(i) {
			t.Fatalf("GET %s on its owner %s = %q, %v", k, owner.Addr(), v, err)
		}
		lockOwner, err := cl.NodeForKey(ctx, "lock:"+k)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := lockOwner.DoInt(ctx, "HEXISTS", "lock:"+k, "owner:1"); err != nil || ok != 1 {
			t.Fatalf("the script's lock:%s is not on its owner %s: %d, %v", k, lockOwner.Addr(), ok, err)
		}
	}
	if len(perMaster) != 3 {
		t.Fatalf("keys landed on %d masters, want 3", len(perMaster))
	}
	movedAfter := 0
	for _, m := range masters {
		movedAfter += errorCount(t, ctx, m, "MOVED")
	}
	if movedAfter != movedBefore {
		t.Fatalf("servers sent %d MOVED replies: the client's slot map was wrong", movedAfter-movedBefore)
	}

	// Keyless commands go to a master; DoKey routes by the given key.
	if v, err := c.Do(ctx, "PING").Get(ctx); err != nil || v.Str != "PONG" {
		t.Fatalf("PING = %v, %v", v, err)
	}
	if v, err := c.DoKey(ctx, "route:7", "OBJECT", "ENCODING", "route:7").Get(ctx); err != nil || v.Str == "" {
		t.Fatalf("DoKey OBJECT ENCODING = %v, %v", v, err)
	}

	// A script whose keys are in two slots fails before anything is sent; the server's CROSSSLOT is typed too.
	_, err = c.Eval(ctx, benchRelease, []string{"{a}x", "{b}y"}, "0", "1", "o").Get(ctx)
	var cse *conn.CrossSlotError
	if !errors.Is(err, conn.ErrCrossSlot) || !errors.As(err, &cse) || cse.Reply != nil || cse.Keys != [2]string{"{a}x", "{b}y"} {
		t.Fatalf("cross-slot Eval: err = %v (%#v)", err, cse)
	}
	_, err = c.Do(ctx, "MSET", "{a}x", "1", "{b}y", "2").Get(ctx)
	var se *resp.ServerError
	if !errors.Is(err, conn.ErrCrossSlot) || !errors.As(err, &se) || se.Prefix != "CROSSSLOT" {
		t.Fatalf("cross-slot MSET: err = %v", err)
	}
	if v, err := c.Do(ctx, "MSET", "{a}x", "1", "{a}y", "2").Get(ctx); err != nil || v.Str != "OK" {
		t.Fatalf("same-slot MSET = %v, %v", v, err)
	}

	// A pipeline goes to one node: a keyless WAIT follows the keyed command; two nodes are refused.
	fs := c.Pipeline(ctx, conn.Cmd{Args: []string{"INCR", "{a}n"}}, conn.Cmd{Args: []string{"WAIT", "1", "1000"}})
	if v, err := fs[0].Get(ctx); err != nil || v.Int != 1 {
		t.Fatalf("pipelined INCR = %v, %v", v, err)
	}
	if v, err := fs[1].Get(ctx); err != nil || v.Int != 1 {
		t.Fatalf("pipelined WAIT = %v, %v; want 1 replica", v, err)
	}
	var far string
	for i := 0; far == ""; i++ {
		if k := "far" + strconv.Itoa(i); nodeOf(t, cl, k) != nodeOf(t, cl, "{a}n") {
			far = k
		}
	}
	fs = c.Pipeline(ctx, conn.Cmd{Args: []string{"GET", "{a}n"}}, conn.Cmd{Args: []string{"GET", far}})
	for _, f := range fs {
		if _, err := f.Get(ctx); !errors.Is(err, conn.ErrCrossNode) {
			t.Fatalf("two-node pipeline: err = %v, want ErrCrossNode", err)
		}
	}
}

// nodeOf returns the address of the master serving key.
func nodeOf(t testing.TB, cl *redistest.Cluster, key string) string {
	t.Helper()
	s, err := cl.NodeForKey(ctxT(t), key)
	if err != nil {
		t.Fatal(err)
	}
	return s.Addr()
}

// TestClusterOverTLS runs a cluster client over TLS (a rediss-cluster:// URL): the slot map's TLS ports, routing,
// SendAndWait and sharded pub/sub.
func TestClusterOverTLS(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.WithTLS())
	ctx := ctxT(t)
	cfg, err := conn.ParseURL("rediss-cluster://" + cl.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS = cl.TLSConfig()
	c := newClient(t, cfg)
	msgs := make(messages, 8)
	if _, err := c.Subscribe("ch:{tls}", msgs.handler).Get(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		k := "tls:" + strconv.Itoa(i)
		if v, err := c.SendAndWait(ctx, conn.Cmd{Args: []string{"SET", k, "v"}}, 1, time.Second).Get(ctx); err != nil || v.Replicas != 1 {
			t.Fatalf("SET %s with WAIT = %+v, %v", k, v, err)
		}
		if owner, err := cl.NodeForKey(ctx, k); err != nil {
			t.Fatal(err)
		} else if got, err := owner.DoString(ctx, "GET", k); err != nil || got != "v" {
			t.Fatalf("GET %s on its owner = %q, %v", k, got, err)
		}
	}
	if _, err := c.Do(ctx, c.PublishCommand(), "ch:{tls}", "hello").Get(ctx); err != nil {
		t.Fatal(err)
	}
	msgs.expect(t, conn.KindMessage, "hello", 5*time.Second)
}

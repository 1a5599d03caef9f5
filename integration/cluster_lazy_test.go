package integration

import (
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// Clients made with LazyConnect while every node of the cluster is down cannot know yet whether the servers have
// sharded pub/sub. Once the cluster is up, a release must still publish where the waiters subscribe (SPUBLISH
// for SSUBSCRIBE), not the PUBLISH that was the only possible answer when the clients were made.
func TestClusterLazyClientsPublishWhereWaitersSubscribe(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a six-node cluster")
	}
	cl := redistest.StartCluster(t)
	for _, n := range cl.Nodes() {
		if err := n.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	mk := func() *rlock.Client {
		c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{ClusterAddrs: cl.Addrs(), LazyConnect: true,
			DialTimeout: 200 * time.Millisecond}})
		if err != nil {
			t.Fatalf("lazy NewClient with every node down: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	holder, waiter := mk(), mk()
	if cmd := holder.Conn().PublishCommand(); cmd != "publish" {
		t.Fatalf("PublishCommand with no node known = %q; this test needs a client that could not probe", cmd)
	}
	for _, n := range cl.Nodes() {
		if err := n.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	ctx := ctxT(t, 60*time.Second)
	if err := cl.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*rlock.Client{holder, waiter} {
		eventually(t, 20*time.Second, "the slot map and the sharded pub/sub probe", func() bool {
			_, err := c.Conn().Do(ctx, "PING").Get(ctx)
			return err == nil && c.Conn().PublishCommand() == "spublish"
		})
	}

	const name = "lazy-wake"
	channel := "redisson_lock__channel:{" + name + "}"
	node, err := cl.NodeForSlot(ctx, conn.KeySlot(channel))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := cl.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	published := func() (n int64) {
		for _, m := range ms {
			n += callsOf(t, m, "publish")
		}
		return n
	}
	held, err := holder.Lock(name).LockLease(ctx, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sp0, p0 := callsOf(t, node, "spublish"), published()
	// The wait ends long before the 20 s lease: only the release's message can grant it in time.
	f := waiter.Lock(name).TryLockAsync(ctx, 10*time.Second, 0)
	eventually(t, 5*time.Second, "a sharded subscription to "+channel, func() bool {
		r, err := node.Do(ctx, "PUBSUB", "SHARDNUMSUB", channel)
		return err == nil && len(r.Array) == 2 && r.Array[1].Int == 1
	})
	if err := holder.Lock(name).Unlock(held); err != nil {
		t.Fatal(err)
	}
	got, err := f.Get(ctx)
	if err != nil {
		t.Fatalf("the waiter was not woken by the release: %v", err)
	}
	if n := callsOf(t, node, "spublish") - sp0; n < 1 {
		t.Errorf("%d SPUBLISH on %s: the release did not publish where the waiter subscribed", n, node.Addr())
	}
	if n := published() - p0; n != 0 {
		t.Errorf("%d PUBLISH on the masters: the release published with the command chosen before the probe", n)
	}
	if err := waiter.Lock(name).Unlock(got); err != nil {
		t.Fatal(err)
	}
}

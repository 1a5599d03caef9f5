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
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// TestClusterSlotMigration migrates slots between masters by hand (SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT
// NODE) and checks each redirection the client must follow, on one cluster.
func TestClusterSlotMigration(t *testing.T) {
	cl := redistest.StartCluster(t)
	// First, while no other client of the cluster exists: it counts the cluster's CLUSTER SHARDS calls as the
	// refreshes of its own client, which another client's periodic refresh would add to.
	t.Run("periodic refresh", func(t *testing.T) { testPeriodicRefresh(t, cl) })
	c := newClient(t, conn.Config{ClusterAddrs: cl.Addrs()})

	t.Run("ASK", func(t *testing.T) { testAsk(t, cl, c) })
	t.Run("TRYAGAIN", func(t *testing.T) { testTryAgain(t, cl, c) })
	t.Run("MOVED under EVALSHA load", func(t *testing.T) { testMigrationUnderLoad(t, cl, c) })
	t.Run("sharded pub/sub follows the slot", func(t *testing.T) { testPubSubFollowsSlot(t, cl, c) })
	t.Run("CLUSTERDOWN", func(t *testing.T) { testClusterDown(t, cl, c) })
	t.Run("master restarted", func(t *testing.T) { testMasterRestart(t, cl, c) })
}

// testPeriodicRefresh: an idle client learns a migration from its periodic refresh, without a MOVED.
func testPeriodicRefresh(t *testing.T, cl *redistest.Cluster) {
	slot := conn.KeySlot("{per}")
	ctx, src, dst := migrationSetup(t, cl, slot)
	p := newClient(t, conn.Config{ClusterAddrs: cl.Addrs(), TopologyRefreshInterval: 100 * time.Millisecond})
	if _, err := p.Do(ctx, "SET", "{per}k", "v").Get(ctx); err != nil {
		t.Fatal(err)
	}
	mg := startMigration(t, ctx, cl, slot, src, dst)
	mg.moveAll()
	mg.finish()
	if err := cl.WaitHealthy(ctx); err != nil { // every node reports the new owner
		t.Fatal(err)
	}
	shardsCalls := func() (n int) {
		for _, s := range cl.Nodes() {
			n += commandCount(t, ctx, s, "cluster|shards")
		}
		return n
	}
	before := shardsCalls()
	eventually(t, func() error { // two refreshes: the second started after the cluster was healthy
		if shardsCalls() < before+2 {
			return errors.New("fewer than two refreshes so far")
		}
		return nil
	})
	moved := errorCount(t, ctx, src, "MOVED")
	if v, err := p.Do(ctx, "GET", "{per}k").Get(ctx); err != nil || v.Str != "v" {
		t.Fatalf("GET = %v, %v", v, err)
	}
	if got := errorCount(t, ctx, src, "MOVED") - moved; got != 0 {
		t.Fatalf("the old owner sent %d MOVED: the periodic refresh did not update the map", got)
	}
}

// testMasterRestart stops a master and starts it again before the cluster fails it over, while scripts keep
// coming for its slot: commands issued while it is down are never sent, so they are retried (no error reaches the
// callers), and the restarted server's empty script cache (NOSCRIPT) is loaded invisibly, also for those retries.
// After a restart a master refuses commands with CLUSTERDOWN for 2 s (CLUSTER_WRITABLE_DELAY): retried too.
func testMasterRestart(t *testing.T, cl *redistest.Cluster, c *conn.Client) {
	slot := conn.KeySlot("{rs}")
	ctx, owner, _ := migrationSetup(t, cl, slot)
	if _, err := c.Eval(ctx, benchAcquire, []string{"{rs}0"}, "30000", "o").Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := owner.Stop(); err != nil {
		t.Fatal(err)
	}
	// Commands written before the client read the EOF fail with ErrConnLost (they were in flight). Wait until a
	// command is held back for a retry instead: its short deadline ends first.
	eventually(t, func() error {
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := c.Do(short, "EXISTS", "{rs}0").Get(ctx); !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("EXISTS while the master is down: %v", err)
		}
		return nil
	})
	var futs []*future.Future[resp.Value]
	for i := range 40 {
		futs = append(futs, c.Eval(ctx, benchAcquire, []string{"{rs}" + strconv.Itoa(i+1)}, "30000", "o"))
		time.Sleep(5 * time.Millisecond) // spread over the reconnection attempts, not a synchronisation
	}
	if err := owner.Restart(); err != nil {
		t.Fatal(err)
	}
	for i, f := range futs {
		if _, err := f.Get(ctx); err != nil {
			t.Fatalf("Eval %d issued while the master was down: %v", i, err)
		}
	}
}

// testPubSubFollowsSlot: a sharded subscription whose slot migrates is dropped by the old owner (it sends
// sunsubscribe); the client subscribes again on the new owner, tells the handler KindResubscribed, and receives
// what is published there.
func testPubSubFollowsSlot(t *testing.T, cl *redistest.Cluster, c *conn.Client) {
	channel := "redisson_lock__channel:{psmig}"
	slot := conn.KeySlot(channel)
	ctx, src, dst := migrationSetup(t, cl, slot)
	msgs := make(messages, 64)
	sub, err := c.Subscribe(channel, msgs.handler).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := c.Do(ctx, c.PublishCommand(), channel, "one").Get(ctx); err != nil {
		t.Fatal(err)
	}
	msgs.expect(t, conn.KindMessage, "one", 5*time.Second)
	mg := startMigration(t, ctx, cl, slot, src, dst)
	mg.finish()
	msgs.expect(t, conn.KindResubscribed, "", 5*time.Second)
	if chans, err := dst.DoStrings(ctx, "PUBSUB", "SHARDCHANNELS"); err != nil || !slices.Contains(chans, channel) {
		t.Fatalf("PUBSUB SHARDCHANNELS on the new owner = %v, %v", chans, err)
	}
	if _, err := c.Do(ctx, c.PublishCommand(), channel, "two").Get(ctx); err != nil {
		t.Fatal(err)
	}
	msgs.expect(t, conn.KindMessage, "two", 5*time.Second)
}

// migrationSetup waits for a healthy cluster and returns slot's owner and another master.
func migrationSetup(t *testing.T, cl *redistest.Cluster, slot int) (ctx context.Context, src, dst *redistest.Server) {
	ctx = ctxT(t)
	if err := cl.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	src, err := cl.NodeForSlot(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, src, otherMaster(t, ctx, cl, src)
}

// testAsk: a key already migrated is read from the importing node after ASK + ASKING; a key not migrated yet
// from the source; after the migration ends, MOVED sends the client to the new owner for good.
func testAsk(t *testing.T, cl *redistest.Cluster, c *conn.Client) {
	slot := conn.KeySlot("{ask}")
	ctx, src, dst := migrationSetup(t, cl, slot)
	for _, k := range []string{"{ask}a", "{ask}b"} {
		if _, err := c.Do(ctx, "SET", k, k+"-value").Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mg := startMigration(t, ctx, cl, slot, src, dst)
	mg.moveKeys("{ask}a")
	asks := errorCount(t, ctx, src, "ASK")
	askings := commandCount(t, ctx, dst, "asking")

	for _, k := range []string{"{ask}a", "{ask}b"} {
		if v, err := c.Do(ctx, "GET", k).Get(ctx); err != nil || v.Str != k+"-value" {
			t.Fatalf("GET %s during the migration = %v, %v", k, v, err)
		}
	}
	if got := errorCount(t, ctx, src, "ASK") - asks; got != 1 {
		t.Fatalf("the source sent %d ASK replies, want 1 (for the migrated key)", got)
	}
	if got := commandCount(t, ctx, dst, "asking") - askings; got != 1 {
		t.Fatalf("the target ran ASKING %d times, want 1", got)
	}

	mg.moveAll()
	mg.finish()
	moved := errorCount(t, ctx, src, "MOVED")
	for range 3 {
		if v, err := c.Do(ctx, "GET", "{ask}b").Get(ctx); err != nil || v.Str != "{ask}b-value" {
			t.Fatalf("GET after the migration = %v, %v", v, err)
		}
	}
	if got := errorCount(t, ctx, src, "MOVED") - moved; got != 1 {
		t.Fatalf("the old owner sent %d MOVED replies, want 1 (then the map is updated)", got)
	}
}

// testTryAgain: a multi-key command whose keys are split between the two nodes gets TRYAGAIN; the client retries
// with backoff, bounded by the caller's deadline, and succeeds once the migration has moved the rest.
func testTryAgain(t *testing.T, cl *redistest.Cluster, c *conn.Client) {
	slot := conn.KeySlot("{try}")
	ctx, src, dst := migrationSetup(t, cl, slot)
	for _, k := range []string{"{try}a", "{try}b"} {
		if _, err := c.Do(ctx, "SET", k, k).Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mg := startMigration(t, ctx, cl, slot, src, dst)
	mg.moveKeys("{try}a")

	// Bounded by the caller's deadline.
	short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	start := time.Now()
	_, err := c.Do(short, "MGET", "{try}a", "{try}b").Get(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("MGET during the split, 150 ms deadline: err = %v after %v; want DeadlineExceeded", err, time.Since(start))
	}

	tries := errorCount(t, ctx, src, "TRYAGAIN")
	f := c.Do(ctx, "MGET", "{try}a", "{try}b")
	eventually(t, func() error { // the server has refused it at least once
		if errorCount(t, ctx, src, "TRYAGAIN") == tries {
			return errors.New("no TRYAGAIN yet")
		}
		return nil
	})
	if f.IsDone() {
		v, err, _ := f.Peek()
		t.Fatalf("MGET completed during the split: %v, %v", v, err)
	}
	mg.moveAll()
	mg.finish()
	v, err := f.Get(ctx)
	if err != nil || len(v.Elems) != 2 || v.Elems[0].Str != "{try}a" || v.Elems[1].Str != "{try}b" {
		t.Fatalf("MGET after the migration = %v, %v", v, err)
	}
}

// testMigrationUnderLoad migrates a slot while 32 goroutines run EVALSHA acquire/release pairs on keys of that
// slot (and 8 on other slots): no error may reach them. During the migration the acquire of a key that is not on
// the source is redirected with ASK; the release (keys: the lock and its channel, which never exists as a key)
// gets TRYAGAIN on the source until its lock key moved; afterwards MOVED.
func testMigrationUnderLoad(t *testing.T, cl *redistest.Cluster, c *conn.Client) {
	slot := conn.KeySlot("{mig}")
	ctx, src, dst := migrationSetup(t, cl, slot)
	var stop atomic.Bool
	var pairs, errs atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for i := range 40 {
		key := "{mig}:" + strconv.Itoa(i)
		if i >= 32 {
			key = "{other:" + strconv.Itoa(i) + "}"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := "owner:" + strconv.Itoa(i)
			for !stop.Load() {
				_, err := c.Eval(ctx, benchAcquire, []string{key}, "30000", owner).Get(ctx)
				if err == nil {
					_, err = c.Eval(ctx, benchRelease, []string{key, key + ":ch"}, "0", "30000", owner).Get(ctx)
				}
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err)
					return
				}
				pairs.Add(1)
			}
		}()
	}
	waitPairs := func(n int64) {
		target := pairs.Load() + n
		eventually(t, func() error {
			if pairs.Load() < target && errs.Load() == 0 {
				return errors.New("load not progressing")
			}
			return nil
		})
	}
	waitPairs(2000)
	asks, tries, moved := errorCount(t, ctx, src, "ASK"), errorCount(t, ctx, src, "TRYAGAIN"), errorCount(t, ctx, src, "MOVED")
	mg := startMigration(t, ctx, cl, slot, src, dst)
	migrated := 0
	for range 5 { // keys come back as acquires create them: sweep a few times under load
		migrated += mg.moveAll()
		waitPairs(50)
	}
	mg.finish()
	waitPairs(2000)
	stop.Store(true)
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		t.Fatalf("%d callers got an error; first: %v", errs.Load(), err)
	}
	a, tr, m := errorCount(t, ctx, src, "ASK")-asks, errorCount(t, ctx, src, "TRYAGAIN")-tries, errorCount(t, ctx, src, "MOVED")-moved
	t.Logf("%d pairs; %d keys migrated; the source sent ASK %d, TRYAGAIN %d, MOVED %d times", pairs.Load(), migrated, a, tr, m)
	if m == 0 || a+tr == 0 {
		t.Fatalf("the migration did not exercise the redirections (ASK %d, TRYAGAIN %d, MOVED %d)", a, tr, m)
	}
	if n, err := dst.DoInt(ctx, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)); err != nil || n != 0 {
		t.Fatalf("keys left in the slot after every release: %d, %v", n, err)
	}
}

// testClusterDown: a slot no master serves gets CLUSTERDOWN; the client retries within the caller's deadline and
// succeeds once the slot is served again; with a short RetryTimeout the CLUSTERDOWN error reaches the caller.
func testClusterDown(t *testing.T, cl *redistest.Cluster, c *conn.Client) {
	slot := conn.KeySlot("{down}")
	ctx, owner, _ := migrationSetup(t, cl, slot)
	s := strconv.Itoa(slot)
	for _, n := range cl.Nodes() {
		// Only the slot goes down, not the whole cluster.
		mustDo(t, ctx, n, "CONFIG", "SET", "cluster-require-full-coverage", "no")
	}
	ms, err := cl.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		mustDo(t, ctx, m, "CLUSTER", "DELSLOTS", s)
	}
	downs := errorCount(t, ctx, owner, "CLUSTERDOWN")

	impatient := newClient(t, conn.Config{ClusterAddrs: cl.Addrs(), RetryTimeout: 100 * time.Millisecond})
	_, err = impatient.Do(ctx, "SET", "{down}x", "1").Get(ctx)
	var se *resp.ServerError
	if !errors.As(err, &se) || se.Prefix != "CLUSTERDOWN" {
		t.Fatalf("SET on a slot nobody serves, RetryTimeout 100ms: err = %v; want CLUSTERDOWN", err)
	}

	start := time.Now()
	f := c.Do(ctx, "SET", "{down}x", "1")
	eventually(t, func() error {
		if errorCount(t, ctx, owner, "CLUSTERDOWN") == downs {
			return errors.New("no CLUSTERDOWN yet")
		}
		return nil
	})
	if f.IsDone() {
		v, err, _ := f.Peek()
		t.Fatalf("SET completed while the slot was down: %v, %v", v, err)
	}
	// Close fails a command waiting for a retry with ErrClosed, at once (and one in flight too: either way).
	closing, err := conn.New(conn.Config{ClusterAddrs: cl.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	pending := closing.Do(ctx, "SET", "{down}y", "1")
	eventually(t, func() error { // two more refusals (f's retries count too): most likely it waits for a retry now
		if errorCount(t, ctx, owner, "CLUSTERDOWN") < downs+2 {
			return errors.New("not refused yet")
		}
		return nil
	})
	closed := time.Now()
	if err := closing.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := pending.Get(ctx); !errors.Is(err, conn.ErrClosed) || time.Since(closed) > time.Second {
		t.Fatalf("a retrying command after Close: err = %v after %v; want ErrClosed", err, time.Since(closed))
	}

	mustDo(t, ctx, owner, "CLUSTER", "ADDSLOTS", s)
	if v, err := f.Get(ctx); err != nil || v.Str != "OK" {
		t.Fatalf("SET after the slot came back = %v, %v", v, err)
	}
	t.Logf("served %v after the first CLUSTERDOWN", time.Since(start))
	if v, err := owner.DoString(ctx, "GET", "{down}x"); err != nil || v != "1" {
		t.Fatalf("GET on the owner = %q, %v", v, err)
	}
}

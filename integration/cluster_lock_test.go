package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// What only a Redis Cluster tests: lock names spread over the slots of three masters, renewal batches that stay
// within one slot, wake-ups over sharded pub/sub, hash tags, and a slot that migrates under a lock workload. One
// cluster serves the subtests.

func TestClusterLocks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a six-node cluster")
	}
	d := startDeployment(t, topoCluster)
	t.Run("renewal batches are single-slot", func(t *testing.T) { testClusterRenewalBatches(t, d) })
	t.Run("waiters are woken over sharded pub/sub", func(t *testing.T) { testClusterShardedWakeUps(t, d) })
	t.Run("hash tags keep a lock's keys on one node", func(t *testing.T) { testClusterHashTags(t, d) })
	t.Run("slot migration under a lock workload", func(t *testing.T) { testClusterMigrationUnderLoad(t, d) })
}

// 200 plain locks spread over the slots, 150 in one slot (hash tag) and 30 read locks, all renewed by the
// watchdog: every renewal EVALSHA a master runs names keys of one slot that it serves, never more than the batch
// size, and locks of one slot are renewed together.
func testClusterRenewalBatches(t *testing.T, d *deployment) {
	d.reset(t)
	ctx := ctxT(t, 60*time.Second)
	var renewed, lost atomic.Int64
	var mu sync.Mutex
	var batchErrs []error
	c, err := rlock.NewClient(lockConfig(d, rlock.Config{
		WatchdogTimeout: 1500 * time.Millisecond,
		Observer: observerFunc{
			renewal: func(e rlock.RenewalEvent) {
				renewed.Add(int64(e.Renewed))
				if e.Err != nil || e.Renewed != e.Locks {
					mu.Lock()
					batchErrs = append(batchErrs, fmt.Errorf("batch of %d: renewed %d, gone %d, err %v", e.Locks, e.Renewed, e.Gone, e.Err))
					mu.Unlock()
				}
			},
			lost: func(rlock.LostEvent) { lost.Add(1) },
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var names []string
	for i := range 200 {
		names = append(names, "spread-"+strconv.Itoa(i))
	}
	for i := range 150 {
		names = append(names, "{batch}:"+strconv.Itoa(i))
	}
	futs := make([]*future.Future[context.Context], 0, len(names)+30)
	for _, n := range names {
		futs = append(futs, c.Lock(n).LockAsync(ctx))
	}
	for i := range 30 {
		futs = append(futs, c.ReadWriteLock("rw-"+strconv.Itoa(i)).ReadLock().LockAsync(ctx))
	}
	held := make([]context.Context, len(futs))
	for i, f := range futs {
		if held[i], err = f.Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	total := int64(len(futs))

	ms, err := d.masters(ctx)
	if err != nil || len(ms) != 3 {
		t.Fatalf("masters: %v, %v", ms, err)
	}
	mons := make([]*monitored, len(ms))
	for i, m := range ms {
		mons[i] = startMonitor(t, m)
	}
	r0 := renewed.Load()
	eventually(t, 20*time.Second, "two renewals of every lock", func() bool { return renewed.Load()-r0 >= 2*total })

	tagSlot := conn.KeySlot("batch")
	slotsWanted := map[int]bool{}
	for _, n := range names {
		slotsWanted[conn.KeySlot(n)] = true
	}
	slotsRenewed := map[int]bool{}
	var tagSizes []int
	calls := 0
	for i, m := range ms {
		for _, cmd := range mons[i].stop() {
			if !strings.EqualFold(cmd[0], "evalsha") || len(cmd) < 4 {
				continue
			}
			numkeys, err := strconv.Atoi(cmd[2])
			if err != nil || numkeys < 1 || len(cmd) < 3+numkeys {
				t.Fatalf("unexpected EVALSHA %q", cmd)
			}
			keys := cmd[3 : 3+numkeys]
			slot := conn.KeySlot(keys[0])
			for _, k := range keys {
				if conn.KeySlot(k) != slot {
					t.Fatalf("a renewal EVALSHA on %s mixes slots %d (%s) and %d (%s)", m.Addr(), slot, keys[0], conn.KeySlot(k), k)
				}
			}
			owner, err := d.cl.NodeForSlot(ctx, slot)
			if err != nil || owner != m {
				t.Fatalf("slot %d renewed on %s, served by %v (%v)", slot, m.Addr(), owner, err)
			}
			if numkeys > rlock.DefaultRenewBatchSize {
				t.Fatalf("a renewal EVALSHA of %d locks, over the batch size", numkeys)
			}
			if slot == tagSlot {
				tagSizes = append(tagSizes, numkeys)
			}
			slotsRenewed[slot] = true
			calls++
		}
	}
	for s := range slotsWanted {
		if !slotsRenewed[s] {
			t.Errorf("slot %d has locks but no renewal was seen", s)
		}
	}
	if !slices.Contains(tagSizes, rlock.DefaultRenewBatchSize) {
		t.Errorf("the 150 locks of slot %d were renewed in calls of %v locks: never a full batch of 100", tagSlot, tagSizes)
	}
	t.Logf("%d renewal calls over %d slots on 3 masters; the 150-lock slot in calls of %v", calls, len(slotsRenewed), tagSizes)
	mu.Lock()
	if len(batchErrs) > 0 {
		t.Errorf("renewal batches failed (CROSSSLOT or MOVED would be here): %v", batchErrs)
	}
	mu.Unlock()
	if n := lost.Load(); n != 0 {
		t.Errorf("%d locks lost", n)
	}
	for i, h := range held {
		var err error
		if i < len(names) {
			err = c.Lock(names[i]).Unlock(h)
		} else {
			err = c.ReadWriteLock("rw-" + strconv.Itoa(i-len(names))).ReadLock().Unlock(h)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A lock's and a semaphore's waiters, on another client, are woken by the release's SPUBLISH on the master of the
// channel's slot, where they subscribed with SSUBSCRIBE; nothing is published with PUBLISH.
func testClusterShardedWakeUps(t *testing.T, d *deployment) {
	d.reset(t)
	ctx := ctxT(t, 30*time.Second)
	holder, waiter := newLockClient(t, d, 0), newLockClient(t, d, 0)
	ms, err := d.masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	published := func() (n int64) {
		for _, m := range ms {
			n += callsOf(t, m, "publish")
		}
		return n
	}
	pub0 := published()

	for _, name := range []string{"wake", "{other}wake"} {
		channel := "redisson_lock__channel:{" + name + "}"
		if strings.Contains(name, "{") {
			channel = "redisson_lock__channel:" + name
		}
		node, err := d.nodeFor(ctx, channel)
		if err != nil {
			t.Fatal(err)
		}
		held, err := holder.Lock(name).LockLease(ctx, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		sp0 := callsOf(t, node, "spublish")
		// The wait ends long before the 20 s lease: only the release's message can grant it in time.
		f := waiter.Lock(name).TryLockAsync(ctx, 10*time.Second, 0)
		eventually(t, 5*time.Second, "a sharded subscription to "+channel, func() bool {
			r, err := node.Do(ctx, "PUBSUB", "SHARDNUMSUB", channel)
			return err == nil && len(r.Array) == 2 && r.Array[1].Int == 1
		})
		if r, err := node.Do(ctx, "PUBSUB", "NUMSUB", channel); err != nil || r.Array[1].Int != 0 {
			t.Fatalf("PUBSUB NUMSUB %s = %v, %v: a plain subscription on a cluster with sharded pub/sub", channel, r, err)
		}
		if err := holder.Lock(name).Unlock(held); err != nil {
			t.Fatal(err)
		}
		got, err := f.Get(ctx)
		if err != nil {
			t.Fatalf("%s: the waiter was not woken: %v", name, err)
		}
		if n := callsOf(t, node, "spublish") - sp0; n < 1 {
			t.Fatalf("%s: %d SPUBLISH on %s", name, n, node.Addr())
		}
		if err := waiter.Lock(name).Unlock(got); err != nil {
			t.Fatal(err)
		}
	}

	sem := "sem"
	if _, err := holder.Semaphore(sem).TrySetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := holder.Semaphore(sem).Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	f := waiter.Semaphore(sem).AcquireAsync(ctx, 1)
	subscribed(t, d, "redisson_sc:{"+sem+"}")
	if err := holder.Semaphore(sem).Release(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get(ctx); err != nil {
		t.Fatalf("semaphore waiter: %v", err)
	}
	if n := published() - pub0; n != 0 {
		t.Fatalf("%d PUBLISH on the masters, want only SPUBLISH", n)
	}
}

// Names with a hash tag put a lock and every key and channel it uses on the slot of the tag, so that names of one
// tag can be combined (a MultiLock, a script over several of them); names without a tag are spread.
func testClusterHashTags(t *testing.T, d *deployment) {
	d.reset(t)
	ctx := ctxT(t, 30*time.Second)
	c := newLockClient(t, d, 0)
	tagNode, err := d.cl.NodeForSlot(ctx, conn.KeySlot("user42"))
	if err != nil {
		t.Fatal(err)
	}
	onTagNode := func(keys ...string) {
		t.Helper()
		for _, k := range keys {
			if n, err := tagNode.DoInt(ctx, "EXISTS", k); err != nil || n != 1 {
				t.Errorf("%s is not on the node of slot %d (%s): %d, %v", k, conn.KeySlot("user42"), tagNode.Addr(), n, err)
			}
		}
	}
	// A name with "{" but no hash tag Redis accepts would put the lock and its channel in different slots: it
	// could be acquired and never released. Refused before anything is sent.
	before := commandCounts(t, d)
	for _, name := range []string{"a{}b", "{a", "x}y{"} {
		var ae *rlock.ArgumentError
		if _, err := c.Lock(name).TryLock(ctx, 0, 0); !errors.As(err, &ae) || ae.Arg != "name" {
			t.Errorf("Lock(%q) = %v, want an *ArgumentError on the name", name, err)
		}
		if _, err := c.FairLock(name).Lock(ctx); !errors.Is(err, rlock.ErrInvalidArgument) {
			t.Errorf("FairLock(%q) = %v, want ErrInvalidArgument", name, err)
		}
		if _, err := c.ReadWriteLock(name).WriteLock().Lock(ctx); !errors.Is(err, rlock.ErrInvalidArgument) {
			t.Errorf("WriteLock(%q) = %v, want ErrInvalidArgument", name, err)
		}
	}
	if sent := commandsSince(before, commandCounts(t, d)); sent != "" {
		t.Fatalf("the refused names sent commands: %s", sent)
	}

	multi := rlock.NewMultiLock(c.Lock("{user42}:orders"), c.Lock("{user42}:invoices"), c.FairLock("{user42}:fair"))
	mh, err := multi.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	onTagNode("{user42}:orders", "{user42}:invoices", "{user42}:fair")
	fenced, token, err := c.FencedLock("{user42}:fenced").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	onTagNode("{user42}:fenced", "redisson_lock_token:{user42}:fenced")
	rh, err := c.ReadWriteLock("{user42}:rw").ReadLock().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	onTagNode("{user42}:rw", "{user42}:rw:"+mustOwner(t, rh)+":rwlock_timeout:1")
	if _, err := c.PermitExpirableSemaphore("{user42}:pes").TrySetPermits(ctx, 2); err != nil {
		t.Fatal(err)
	}
	id, err := c.PermitExpirableSemaphore("{user42}:pes").Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	onTagNode("{user42}:pes")
	if token < 1 {
		t.Fatalf("token %d", token)
	}
	// A fair lock's queue under a tag, with a waiter in it.
	other := newLockClient(t, d, 0)
	fh, err := c.FairLock("{user42}:q").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wf := other.FairLock("{user42}:q").TryLockAsync(ctx, 10*time.Second, 0)
	eventually(t, 5*time.Second, "the fair waiter in the queue", func() bool {
		n, err := tagNode.DoInt(ctx, "LLEN", "redisson_lock_queue:{user42}:q")
		return err == nil && n == 1
	})
	if err := c.FairLock("{user42}:q").Unlock(fh); err != nil {
		t.Fatal(err)
	}
	wh, err := wf.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}

	for _, err := range []error{
		other.FairLock("{user42}:q").Unlock(wh),
		c.PermitExpirableSemaphore("{user42}:pes").Release(ctx, id),
		c.ReadWriteLock("{user42}:rw").ReadLock().Unlock(rh),
		c.FencedLock("{user42}:fenced").Unlock(fenced),
		multi.Unlock(mh),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// What stays: the fenced lock's token counter and the semaphore's permits.
	keys, err := tagNode.DoStrings(ctx, "KEYS", "*")
	slices.Sort(keys)
	if want := []string{"redisson_lock_token:{user42}:fenced", "{user42}:pes"}; err != nil || !slices.Equal(keys, want) {
		t.Fatalf("keys after every release = %q, %v; want %q", keys, err, want)
	}
	if n, err := d.DoInt(ctx, "DBSIZE"); err != nil || n != 2 {
		t.Fatalf("DBSIZE after every release = %d, %v; want 2", n, err)
	}
}

// A slot holding eight contended locks migrates to another master and back (SETSLOT IMPORTING/MIGRATING, MIGRATE
// in batches, SETSLOT NODE) while two clients acquire, renew (watchdog 900 ms) and release them and eight locks
// elsewhere: no error reaches a caller, and no lock is ever held by two owners.
func testClusterMigrationUnderLoad(t *testing.T, d *deployment) {
	d.reset(t)
	ctx := ctxT(t, 120*time.Second)
	clients := []*rlock.Client{newLockClient(t, d, 900*time.Millisecond), newLockClient(t, d, 900*time.Millisecond)}
	var names []string
	for i := range 8 {
		names = append(names, "{mig}:"+strconv.Itoa(i), "elsewhere-"+strconv.Itoa(i))
	}
	holders := make([]atomic.Int32, len(names))
	var ops, doubles atomic.Int64
	var mu sync.Mutex
	var errs []error
	record := func(err error) {
		mu.Lock()
		if len(errs) < 20 {
			errs = append(errs, err)
		}
		mu.Unlock()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() { // owned by the test: ends when stop is closed, waited for by wg
			defer wg.Done()
			c := clients[g%2]
			rnd := rand.New(rand.NewPCG(uint64(g), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := rnd.IntN(len(names))
				l := c.Lock(names[i])
				held, err := l.TryLock(ctx, 10*time.Second, 0)
				if err != nil {
					record(fmt.Errorf("TryLock %s: %w", names[i], err))
					continue
				}
				if !holders[i].CompareAndSwap(0, 1) {
					doubles.Add(1)
				}
				time.Sleep(time.Duration(rnd.IntN(2000)) * time.Microsecond) // work under the lock
				holders[i].Store(0)
				if err := l.Unlock(held); err != nil {
					record(fmt.Errorf("Unlock %s: %w", names[i], err))
				}
				ops.Add(1)
			}
		}()
	}
	progress := func(n int64) {
		from := ops.Load()
		eventually(t, 20*time.Second, "lock operations to go on", func() bool { return ops.Load() >= from+n })
	}
	progress(200)

	slot := conn.KeySlot("mig")
	src, err := d.cl.NodeForSlot(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	dst := anotherMaster(t, ctx, d.cl, src)
	moved := 0
	for _, hop := range [][2]*redistest.Server{{src, dst}, {dst, src}} {
		moved += migrateSlot(t, ctx, d.cl, slot, hop[0], hop[1], nil)
		if owner, err := d.cl.NodeForSlot(ctx, slot); err != nil || owner != hop[1] {
			t.Fatalf("slot %d served by %v after its migration to %s (%v)", slot, owner, hop[1].Addr(), err)
		}
		progress(100)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d lock operations, %d keys migrated (twice one slot)", ops.Load(), moved)
	if moved == 0 {
		t.Fatal("no key was migrated: the workload did not touch the slot")
	}
	if n := doubles.Load(); n != 0 {
		t.Fatalf("%d double grants", n)
	}
	if len(errs) > 0 {
		t.Fatalf("errors reached callers during the migrations: %v", errors.Join(errs...))
	}
}

// Releases while a slot stays open for a migration for 2 s, with one lock's key moved and the other's not. Every
// release names two keys (the lock and its channel, which is never a key: Redisson's layout), so the servers refuse
// both while the slot is open — TRYAGAIN from the source for the key still there; ASK from the source, then
// TRYAGAIN from the destination after ASKING, for the key moved — until the migration ends. The releases must
// then go through: 2 s is well within conn's RetryTimeout (5 s). (The moved key's release used to fail with the
// ASK error after about 1.4 s: conn counted each ASK of the ASK / TRYAGAIN cycle against maxMoves and gave up
// long before RetryTimeout.)
func TestClusterReleaseDuringASlowMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a six-node cluster")
	}
	d := startDeployment(t, topoCluster)
	ctx := ctxT(t, 30*time.Second)
	c := newLockClient(t, d, 0)
	moved, stays := c.Lock("{slow}moved"), c.Lock("{slow}stays")
	hm, hs := mustLock(t, moved, ctx), mustLock(t, stays, ctx)
	slot := conn.KeySlot("slow")
	src, err := d.cl.NodeForSlot(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	dst := anotherMaster(t, ctx, d.cl, src)
	mg, err := d.cl.StartMigration(ctx, slot, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := mg.MoveKeys(ctx, "{slow}moved"); err != nil {
		t.Fatal(err)
	}

	fm, fs := moved.UnlockAsync(hm), stays.UnlockAsync(hs)
	open := time.Now()
	finished := make(chan struct{})
	time.AfterFunc(2*time.Second, func() { // the rest of the migration, as a slow reshard would do it
		defer close(finished)
		err := mg.MoveKeys(ctx, "{slow}stays")
		if err == nil {
			err = mg.Finish(ctx)
		}
		if err != nil {
			t.Error(err) // not t.Fatal: this is not the test's goroutine
		}
	})
	defer func() { <-finished }()
	for name, f := range map[string]*future.Future[struct{}]{"moved": fm, "stays": fs} {
		if _, err := f.Get(ctx); err != nil {
			t.Errorf("Unlock of the lock whose key %s, %v after the slot opened: %v", name, time.Since(open), err)
		}
	}
}

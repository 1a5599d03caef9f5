package integration

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// Replica-synced acquire (rlock.Config.SyncReplicas, Redisson's checkLockSyncedSlaves) on a Sentinel-managed
// master with two replicas, and on servers without replicas or without WAIT.

// callsOf returns how many times srv has run the command (its INFO commandstats name, such as "wait").
func callsOf(t testing.TB, srv *redistest.Server, command string) int64 {
	t.Helper()
	info, err := srv.Info(context.Background(), "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	v, ok := info["cmdstat_"+command]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(strings.SplitN(v, ",", 2)[0], "calls="), 10, 64)
	if err != nil {
		t.Fatalf("cmdstat_%s %q: %v", command, v, err)
	}
	return n
}

func waitCalls(t testing.TB, srv *redistest.Server) int64 { return callsOf(t, srv, "wait") }

// onEveryReplica checks, without waiting, that every replica has the hash field field in key: the grant was on
// the replicas when the acquire returned.
func onEveryReplica(t testing.TB, rs *redistest.ReplicaSet, key, field string) {
	t.Helper()
	replicas, err := rs.Replicas(context.Background())
	if err != nil || len(replicas) != 2 {
		t.Fatalf("replicas: %v, %v", replicas, err)
	}
	for _, r := range replicas {
		if m := hgetall(t, r, key); m[field] == "" {
			t.Errorf("replica %s: %s = %v right after the acquire, want field %s", r.Addr(), key, m, field)
		}
	}
}

func syncedClient(t testing.TB, d *deployment, cfg rlock.Config) *rlock.Client {
	t.Helper()
	c, err := rlock.NewClient(lockConfig(d, cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Every lock kind's acquire is followed by one WAIT, and returns only once both replicas have the grant.
func TestSyncedAcquireOfEveryLockKindIsOnTheReplicas(t *testing.T) {
	d := startDeployment(t, topoSentinelSync)
	ctx := ctxT(t, 30*time.Second)
	master, err := d.rs.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var handoffs sync.Map
	c := syncedClient(t, d, rlock.Config{Observer: observerFunc{acquired: func(e rlock.AcquiredEvent) {
		if e.HandOff {
			handoffs.Store(e.Name, true)
		}
	}}})

	w0, e0 := waitCalls(t, master), callsOf(t, master, "evalsha")
	held := mustLock(t, c.Lock("plain"), ctx)
	onEveryReplica(t, d.rs, "plain", mustOwner(t, held))
	fair, err := c.FairLock("fair").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	onEveryReplica(t, d.rs, "fair", mustOwner(t, fair))
	fenced, token, err := c.FencedLock("fenced").Lock(ctx)
	if err != nil || token < 1 {
		t.Fatalf("fenced: %d, %v", token, err)
	}
	onEveryReplica(t, d.rs, "fenced", mustOwner(t, fenced))
	read, err := c.ReadWriteLock("rw-r").ReadLock().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	onEveryReplica(t, d.rs, "rw-r", mustOwner(t, read))
	write, err := c.ReadWriteLock("rw-w").WriteLock().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	onEveryReplica(t, d.rs, "rw-w", mustOwner(t, write)+":write")
	if _, err := rlock.NewMultiLock(c.Lock("m1"), c.Lock("m2")).Lock(rlock.WithOwner(ctx, "77")); err != nil {
		t.Fatal(err)
	}
	onEveryReplica(t, d.rs, "m1", c.ID()+":77")
	onEveryReplica(t, d.rs, "m2", c.ID()+":77")
	again := mustLock(t, c.Lock("plain"), held) // re-entry waits too
	if got := hgetall(t, master, "plain")[mustOwner(t, held)]; got != "2" {
		t.Fatalf("hold count after re-entry = %q, want 2", got)
	}
	// Every EVALSHA so far was an acquire (the first of each script twice: NOSCRIPT, then again after loading it).
	if n, e := waitCalls(t, master)-w0, callsOf(t, master, "evalsha")-e0; n != e || n < 8 {
		t.Fatalf("%d WAITs for %d EVALSHAs, want one per EVALSHA and at least 8 (plain, fair, fenced, read, "+
			"write, 2 in the multi, re-entry)", n, e)
	}

	// Contended: the waiter is woken by the release (no hand-off: it grants without WAIT) and attempts with WAIT.
	mustUnlock(t, c.Lock("plain"), again)
	f := c.Lock("plain").LockAsync(ctx)
	subscribed(t, master, "redisson_lock__channel:{plain}")
	w1 := waitCalls(t, master)
	mustUnlock(t, c.Lock("plain"), held)
	next, err := f.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	onEveryReplica(t, d.rs, "plain", mustOwner(t, next))
	if _, ok := handoffs.Load("plain"); ok {
		t.Fatal("the lock was handed off (granted without WAIT)")
	}
	if n := waitCalls(t, master) - w1; n < 1 {
		t.Fatalf("the woken waiter's attempt sent %d WAITs, want at least 1", n)
	}
	mustUnlock(t, c.Lock("plain"), next)
}

// A grant that a stopped replica cannot acknowledge is given back: TryLock without wait fails with a
// *ReplicationError at once, Lock after its retries; a wait that outlasts the outage ends with the lock.
func TestSyncedAcquireGivesBackAnUnacknowledgedGrant(t *testing.T) {
	d := startDeployment(t, topoSentinelSync)
	ctx := ctxT(t, 30*time.Second)
	master, err := d.rs.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replicas, err := d.rs.Replicas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := syncedClient(t, d, rlock.Config{SyncTimeout: 100 * time.Millisecond, RetryAttempts: 2,
		RetryDelay: 50 * time.Millisecond})
	l := c.Lock("lock")

	if err := replicas[0].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replicas[0].Resume() })

	checkFree := func(what string) {
		t.Helper()
		if n, _ := master.DoInt(ctx, "EXISTS", "lock"); n != 0 {
			t.Fatalf("%s: the unacknowledged grant is still on the master: %v", what, hgetall(t, master, "lock"))
		}
		if st := c.Stats(); st.Held != 0 {
			t.Fatalf("%s: stats %+v, want nothing held", what, st)
		}
	}
	var re *rlock.ReplicationError
	_, err = l.TryLock(ctx, 0, 0)
	if !errors.As(err, &re) || !errors.Is(err, rlock.ErrNotReplicated) {
		t.Fatalf("TryLock(wait 0) with a replica stopped = %v, want a *ReplicationError", err)
	}
	if re.Wanted != 2 || re.Acked != 1 || re.Attempts != 1 || !re.Released || re.Name != "lock" || re.Err != nil {
		t.Fatalf("ReplicationError = %+v, want 1 of 2 acknowledged, 1 attempt, released", *re)
	}
	checkFree("TryLock")

	start := time.Now()
	_, err = l.Lock(ctx)
	if !errors.As(err, &re) || re.Attempts != 3 || re.Acked != 1 {
		t.Fatalf("Lock with a replica stopped = %v, want a *ReplicationError after 3 grants", err)
	}
	if took := time.Since(start); took < 3*100*time.Millisecond+2*50*time.Millisecond {
		t.Fatalf("Lock failed after %v, before three WAITs of 100 ms and two retry delays", took)
	}
	checkFree("Lock")

	// A wait that outlasts the outage: the retries find the replica back.
	w0 := waitCalls(t, master)
	f := l.TryLockAsync(ctx, 20*time.Second, 0)
	eventually(t, 5*time.Second, "a first unacknowledged grant", func() bool { return waitCalls(t, master) > w0 })
	if err := replicas[0].Resume(); err != nil {
		t.Fatal(err)
	}
	held, err := f.Get(ctx)
	if err != nil {
		t.Fatalf("TryLock over the outage: %v", err)
	}
	onEveryReplica(t, d.rs, "lock", mustOwner(t, held))
	mustUnlock(t, l, held)
}

// A wait that ends before the next retry ends the call with the *ReplicationError, not ErrNotAcquired.
func TestSyncedAcquireWaitTooShortForARetry(t *testing.T) {
	srv := redistest.Start(t) // no replica: WAIT 1 always answers 0
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: srv.Addr()}, SyncReplicas: 1,
		SyncTimeout: 20 * time.Millisecond, RetryDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxT(t, 10*time.Second)
	_, err = c.Lock("lock").TryLock(ctx, 500*time.Millisecond, 0)
	var re *rlock.ReplicationError
	if !errors.As(err, &re) || re.Acked != 0 || re.Wanted != 1 || re.Attempts != 1 {
		t.Fatalf("TryLock = %v, want a *ReplicationError (0 of 1, one attempt)", err)
	}
	if n, _ := srv.DoInt(ctx, "EXISTS", "lock"); n != 0 {
		t.Fatal("the unacknowledged grant is still on the server")
	}
	// The fair lock leaves the server's queue too.
	if _, err := c.FairLock("fair").TryLock(ctx, 0, 0); !errors.Is(err, rlock.ErrNotReplicated) {
		t.Fatalf("FairLock.TryLock = %v, want ErrNotReplicated", err)
	}
	if n, _ := srv.DoInt(ctx, "EXISTS", "fair", "redisson_lock_queue:{fair}", "redisson_lock_timeout:{fair}"); n != 0 {
		t.Fatalf("%d fair lock keys left on the server", n)
	}
}

// logCounter counts the log records whose message contains a word.
type logCounter struct {
	mu    sync.Mutex
	word  string
	count int
}

func (h *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *logCounter) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.word) {
		h.mu.Lock()
		h.count++
		h.mu.Unlock()
	}
	return nil
}
func (h *logCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logCounter) WithGroup(string) slog.Handler      { return h }

func (h *logCounter) n() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

// A server without WAIT (renamed away, as some proxies do) is detected once, logged once, and the locks work.
func TestSyncedAcquireOnAServerWithoutWait(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig("rename-command", `WAIT ""`))
	logs := &logCounter{word: "WAIT"}
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: srv.Addr()}, SyncReplicas: 1,
		Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxT(t, 10*time.Second)
	refused := func() string {
		t.Helper()
		info, err := srv.Info(ctx, "errorstats")
		if err != nil {
			t.Fatal(err)
		}
		return info["errorstat_ERR"]
	}
	var first string
	for i := range 3 {
		held, err := c.Lock("lock").Lock(ctx)
		if err != nil {
			t.Fatalf("Lock %d on a server without WAIT: %v", i, err)
		}
		mustUnlock(t, c.Lock("lock"), held)
		fair, err := c.FairLock("fair").Lock(ctx)
		if err != nil {
			t.Fatalf("FairLock %d: %v", i, err)
		}
		if err := c.FairLock("fair").Unlock(fair); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// The first acquire's WAIT was refused (twice: the script was not loaded yet, and conn sends the
			// EVALSHA and its WAIT again after loading it).
			if first = refused(); first == "" {
				t.Fatal("no WAIT was refused: the server has WAIT, or none was sent")
			}
		}
	}
	if n := logs.n(); n != 1 {
		t.Fatalf("%d log lines about WAIT, want exactly 1", n)
	}
	if now := refused(); now != first {
		t.Fatalf("errorstat_ERR went from %q to %q: WAIT was sent again after it was found missing", first, now)
	}
}

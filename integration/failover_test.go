package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// A master killed (SIGKILL) under a lock workload, on a cluster and behind Sentinel: the client serves its locks
// again within 5 s of the kill (the time is measured and logged), and every waiter ends within its bound
// meanwhile, with or without the lock.

func TestFailoverClusterMasterKilledUnderLockWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a six-node cluster")
	}
	// cluster-node-timeout 1 s: the replica takes over about 2 s after the kill (2 s, the default of redistest,
	// makes the servers' own failover 3-4 s, too close to the 5 s asked of the client).
	d := &deployment{name: topoCluster, cl: redistest.StartCluster(t, redistest.WithClusterNodeTimeout(time.Second))}
	ctx := ctxT(t, 60*time.Second)
	names := make([]string, 24)
	for i := range names {
		names[i] = "fo-" + strconv.Itoa(i)
	}
	victim, err := d.cl.NodeForSlot(ctx, conn.KeySlot(names[0]))
	if err != nil {
		t.Fatal(err)
	}
	onVictim := func(name string) bool {
		n, err := d.cl.NodeForSlot(ctx, conn.KeySlot(name))
		return err == nil && n == victim
	}
	victimNames := map[string]bool{}
	for _, n := range names {
		if onVictim(n) {
			victimNames[n] = true
		}
	}
	r := runKillWorkload(t, d, names, victimNames, victim, func(ctx context.Context) error {
		n, err := d.cl.NodeForSlot(ctx, conn.KeySlot(names[0]))
		if err != nil {
			return err
		}
		if n == victim {
			return errors.New("the killed master still serves the slot")
		}
		return nil
	})
	r.check(t, "cluster")
}

func TestFailoverSentinelMasterKilledUnderLockWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a replica set")
	}
	d := startDeployment(t, topoSentinel)
	ctx := ctxT(t, 60*time.Second)
	names := make([]string, 24)
	victimNames := map[string]bool{}
	for i := range names {
		names[i] = "fo-" + strconv.Itoa(i)
		victimNames[names[i]] = true
	}
	victim, err := d.rs.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := runKillWorkload(t, d, names, victimNames, victim, func(ctx context.Context) error {
		return promotedSince(ctx, d.rs, victim)
	})
	r.check(t, "sentinel")
}

// promotedSince reports nil once the Sentinels name another master than old and it says so itself.
func promotedSince(ctx context.Context, rs *redistest.ReplicaSet, old *redistest.Server) error {
	m, err := rs.Master(ctx)
	if err != nil {
		return err
	}
	if m == old {
		return errors.New("the Sentinels still name the killed master")
	}
	info, err := m.Info(ctx, "replication")
	if err != nil {
		return err
	}
	if info["role"] != "master" {
		return fmt.Errorf("%s is named master but says %s", m.Addr(), info["role"])
	}
	return nil
}

// killRun is what a lock workload saw through a master's death.
type killRun struct {
	wait        time.Duration // every TryLock's wait
	killedAt    time.Time
	promoted    time.Duration // kill -> the servers' failover done (as the test's polling saw it)
	recovered   time.Duration // kill -> the first grant, to a call issued after the kill, of a lock on the killed master
	slowest     time.Duration // the longest TryLock
	late        []string      // TryLocks that outlived their bound
	errs        map[string]int
	afterErrs   []error // errors of calls issued once the client had recovered
	ops, doubts int64   // completed lock/unlock cycles; grants while another owner still believed it held the lock
}

// runKillWorkload runs 16 goroutines (two clients) of TryLock (wait 3 s, watchdog 3 s) / short hold / Unlock over
// names, kills victim once the workload runs, waits with promoted for the servers' failover, and goes on until
// the client has recovered plus one second.
func runKillWorkload(t *testing.T, d *deployment, names []string, victimNames map[string]bool,
	victim *redistest.Server, promoted func(context.Context) error) *killRun {
	t.Helper()
	ctx := ctxT(t, 60*time.Second)
	clients := []*rlock.Client{newLockClient(t, d, 3*time.Second), newLockClient(t, d, 3*time.Second)}
	r := &killRun{wait: 3 * time.Second, errs: map[string]int{}}
	var (
		mu         sync.Mutex
		killed     atomic.Bool
		killedAt   time.Time
		recoveredN atomic.Int64 // nanoseconds after the kill; 0 = not yet
		holders    = make([]atomic.Pointer[context.Context], len(names))
		ops        atomic.Int64
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() { // owned by the test: ends when stop is closed, waited for by wg
			defer wg.Done()
			c := clients[g%2]
			rnd := rand.New(rand.NewPCG(uint64(g), 11))
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := rnd.IntN(len(names))
				l := c.Lock(names[i])
				afterKill := killed.Load()
				start := time.Now()
				held, err := l.TryLock(ctx, r.wait, 0)
				took := time.Since(start)
				mu.Lock()
				r.slowest = max(r.slowest, took)
				if took > r.wait+time.Second {
					r.late = append(r.late, fmt.Sprintf("%s: %v (%v)", names[i], took, err))
				}
				rec := recoveredN.Load()
				if err != nil {
					r.errs[errClass(err)]++
					if rec != 0 && start.Sub(killedAt) > time.Duration(rec)+time.Second {
						r.afterErrs = append(r.afterErrs, fmt.Errorf("TryLock %s: %w", names[i], err))
					}
				} else if afterKill && victimNames[names[i]] && rec == 0 {
					recoveredN.Store(int64(time.Since(killedAt)))
				}
				mu.Unlock()
				if err != nil {
					continue
				}
				// A double grant: another owner's held context is still live (it believes it holds the lock).
				if prev := holders[i].Swap(&held); prev != nil && (*prev).Err() == nil {
					mu.Lock()
					r.doubts++
					mu.Unlock()
				}
				time.Sleep(time.Duration(rnd.IntN(1000)) * time.Microsecond) // work under the lock
				holders[i].CompareAndSwap(&held, nil)
				if err := l.Unlock(held); err != nil {
					mu.Lock()
					r.errs["Unlock: "+errClass(err)]++
					if rec := recoveredN.Load(); rec != 0 && start.Sub(killedAt) > time.Duration(rec)+time.Second {
						r.afterErrs = append(r.afterErrs, fmt.Errorf("Unlock %s: %w", names[i], err))
					}
					mu.Unlock()
				}
				ops.Add(1)
			}
		}()
	}
	eventually(t, 20*time.Second, "the workload to run", func() bool { return ops.Load() >= 300 })

	mu.Lock()
	killedAt = time.Now()
	r.killedAt = killedAt
	mu.Unlock()
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.Store(true)
	for {
		err := promoted(ctx)
		if err == nil {
			r.promoted = time.Since(killedAt)
			break
		}
		if ctx.Err() != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("no failover: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polls other processes' state: nothing to wait on
	}
	eventually(t, 30*time.Second, "a grant on the killed master's slots after the kill", func() bool {
		return recoveredN.Load() != 0
	})
	r.recovered = time.Duration(recoveredN.Load())
	from := ops.Load()
	eventually(t, 30*time.Second, "the workload to go on after the recovery", func() bool {
		return ops.Load() >= from+300 && time.Since(killedAt) > r.recovered+2*time.Second
	})
	close(stop)
	wg.Wait()
	r.ops = ops.Load()
	return r
}

// check logs the figures and fails on what the requirement forbids: recovery later than 5 s after the kill (or a
// second after the servers' own failover, when that took longer), a waiter past its bound, or an error once the
// client has recovered.
func (r *killRun) check(t *testing.T, what string) {
	t.Helper()
	t.Logf("%s: servers' failover done %v after the kill, client serving the killed master's locks again after %v; "+
		"slowest TryLock (wait %v) %v; %d lock cycles; errors %v; double grants %d",
		what, r.promoted.Round(time.Millisecond), r.recovered.Round(time.Millisecond), r.wait,
		r.slowest.Round(time.Millisecond), r.ops, r.errs, r.doubts)
	// 5 s holds the servers' failover with this deployment's settings and the client's part; when the servers
	// themselves took longer (a loaded machine), the client is held to a second after them.
	limit := 5 * time.Second
	if r.promoted > 4*time.Second {
		limit = r.promoted + time.Second
	}
	if r.recovered > limit {
		t.Errorf("the client served the killed master's locks again %v after the kill, want within %v (servers' "+
			"failover done after %v)", r.recovered, limit, r.promoted.Round(time.Millisecond))
	}
	if len(r.late) > 0 {
		t.Errorf("%d TryLocks outlived their bound (wait %v + 1 s): %v", len(r.late), r.wait, r.late[:min(5, len(r.late))])
	}
	if len(r.afterErrs) > 0 {
		t.Errorf("errors after the recovery: %v", errors.Join(r.afterErrs[:min(5, len(r.afterErrs))]...))
	}
}

// errClass names an error for the tally: the sentinel it matches, or its text.
func errClass(err error) string {
	for _, s := range []error{rlock.ErrNotAcquired, rlock.ErrNotHeld, rlock.ErrNotReplicated, conn.ErrConnLost,
		conn.ErrUnavailable, conn.ErrTimeout, context.DeadlineExceeded} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return err.Error()
}

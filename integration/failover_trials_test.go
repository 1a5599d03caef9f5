package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// Failover trials: does a lock granted by a Sentinel-managed master survive the master's death, with
// and without replica-synced acquire (rlock.Config.SyncReplicas, Redisson's checkLockSyncedSlaves)?
//
// One trial, on a replica set (master + 2 replicas + 3 Sentinels) reused across trials:
//
//  1. Replication lag: both replicas get CLIENT PAUSE <trialLag> WRITE. A paused replica still reads its master's
//     stream but applies nothing (and acknowledges nothing) until the pause ends. This is the window every
//     asynchronously replicated write has in production — a replica busy, a slow link, a replica catching up —
//     made long enough (trialLag) to be hit on purpose instead of by luck: on loopback the window is otherwise a
//     few microseconds, since the master ships the write to its replicas in the same event-loop turn as its reply.
//  2. Client A takes the lock: TryLock(wait 0, lease trialLease), an explicit lease, so no watchdog renewal can
//     learn of a loss and end A's held context during the trial.
//     WAIT on (SyncReplicas 1, SyncTimeout trialSyncTimeout): the grant returns only once a replica has applied
//     it, i.e. after the lag has passed. WAIT off: the grant returns at once, inside the lag window.
//  3. The master is killed (SIGKILL) right after A's reply. A paused replica that loses its master throws away
//     what it read but had not applied (checked with redis-cli before this test was written: the key is gone once
//     the pause ends), exactly as a lagging replica loses what was still in flight when its master crashed.
//  4. The Sentinels notice the death (down-after, 2 s) and fail over on their own: they elect a leader,
//     which promotes the replica with the highest replication offset in its latest INFO (refreshed every second
//     once the master is down) and reconfigures the other one.
//  5. Client B (another client, so another owner) tries the same lock: TryLock(wait 0), repeated on transport
//     errors (B follows the switch to the new master) until it is granted or refused (rlock.ErrNotAcquired).
//     A double grant is B's grant while A's held context is still live: A never released and its lease has not
//     ended, so A still believes it holds the lock.
//  6. Reset: the killed node rejoins as a replica of the new master; the keyspace is emptied.
//
// Trials of the two modes alternate on the same replica set and clients. With WAIT on the count must be 0; with
// WAIT off double grants are expected whenever the kill fell inside the lag window (reported, not asserted: it is
// what WAIT is for).
//
//	LOCKSMITH_FAILOVER_TRIALS=100 go test -count=1 -run FailoverTrials -v ./integration
//
// runs 100 trials per mode; the default (CI) is defaultFailoverTrials per mode. LOCKSMITH_FAILOVER_BUDGET=15m
// stops starting trials after that long (the counts logged are those run, equal for both modes).
//
// LOCKSMITH_FAILOVER_KIND=forced replaces step 4 by SENTINEL FAILOVER sent right after the kill (what an operator
// does who does not want to wait for detection; about 1.5 s faster per trial). It shows the limit of acknowledging
// by fewer replicas than there are: a forced failover skips the 1 s INFO refresh of a down master, so the Sentinel
// ranks the replicas by offsets it last read up to 10 s ago, before the grant, which cannot tell which replica has
// it. When one replica had applied the grant (and acknowledged it) and the other not yet — a few milliseconds
// between their pauses' ends are enough — it promotes either: with SyncReplicas 1 of 2, 18 double grants in 100
// WAIT-on trials were measured, and in a diagnostic run that read both replicas right after each grant, all 6
// double grants of 12 were promotions of the replica without it, all 6 refusals of the one with it. The test then
// fails, as it should. LOCKSMITH_FAILOVER_SYNC_REPLICAS=2 (WAIT on's SyncReplicas, default 1) waits for both:
// forced, 0 double grants in 25 WAIT-on trials. With detected failovers (the default), SyncReplicas 1 measured 0
// in 100 (WAIT off: 100 in 100; 2026-11-26, 17m39s, 3.2 s of failover per trial).
//
// 100 trials per mode take about 18 minutes: give go test a -timeout beyond its default 10 minutes, e.g.
//
//	LOCKSMITH_FAILOVER_TRIALS=100 LOCKSMITH_FAILOVER_BUDGET=30m go test -count=1 -timeout 45m -run 'TestFailoverTrials$' -v ./integration

const (
	defaultFailoverTrials = 2                      // per mode: about 25 s in all (a trial takes about 5 s, 3.3 s of it the failover)
	trialLag              = 300 * time.Millisecond // CLIENT PAUSE of the replicas: the replication lag
	trialSyncTimeout      = time.Second            // SyncTimeout of WAIT on: well beyond the lag
	trialLease            = 30 * time.Second       // A's lease: longer than any trial
	trialVerdictWait      = 10 * time.Second       // how long B may take to get a grant or a refusal
)

// trialMode is one configuration of the clients.
type trialMode struct {
	name         string
	syncReplicas int
	a, b         *rlock.Client
	// Tallies.
	trials, doubles, refusedA, lost int
	took, failover                  time.Duration // sums over the mode's trials
}

// trialOutcome is what one trial saw.
type trialOutcome struct {
	double   bool          // B granted while A's held context was live
	bGranted bool          // B granted at all
	refusedA bool          // A's acquire failed (WAIT on: not acknowledged in time); the trial proves nothing
	aLost    bool          // A's held context had ended by the time B was answered
	inWindow bool          // the kill came within the lag window after the pause
	failover time.Duration // kill -> the Sentinels name the new master
	verdict  time.Duration // new master named -> B's answer
	reset    time.Duration // the killed node's rejoin and the emptying of the keyspace
}

// failoverTrialsEnv reads LOCKSMITH_FAILOVER_TRIALS, LOCKSMITH_FAILOVER_BUDGET (0: none),
// LOCKSMITH_FAILOVER_KIND and LOCKSMITH_FAILOVER_SYNC_REPLICAS (see the top of the file).
func failoverTrialsEnv(t *testing.T) (n int, budget time.Duration, forced bool, syncReplicas int) {
	switch k := os.Getenv("LOCKSMITH_FAILOVER_KIND"); k {
	case "", "detected":
	case "forced":
		forced = true
	default:
		t.Fatalf("LOCKSMITH_FAILOVER_KIND=%q: want detected (the default) or forced", k)
	}
	if v := os.Getenv("LOCKSMITH_FAILOVER_BUDGET"); v != "" {
		var err error
		if budget, err = time.ParseDuration(v); err != nil || budget <= 0 {
			t.Fatalf("LOCKSMITH_FAILOVER_BUDGET=%q: want a positive duration such as 15m", v)
		}
	}
	syncReplicas = 1
	if v := os.Getenv("LOCKSMITH_FAILOVER_SYNC_REPLICAS"); v != "" {
		var err error
		if syncReplicas, err = strconv.Atoi(v); err != nil || syncReplicas < 1 || syncReplicas > 2 {
			t.Fatalf("LOCKSMITH_FAILOVER_SYNC_REPLICAS=%q: want 1 or 2 (the replica set has two replicas)", v)
		}
	}
	return failoverTrialCount(t), budget, forced, syncReplicas
}

func failoverTrialCount(t *testing.T) int {
	v := os.Getenv("LOCKSMITH_FAILOVER_TRIALS")
	if v == "" {
		return defaultFailoverTrials
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("LOCKSMITH_FAILOVER_TRIALS=%q: want a positive number of trials per mode", v)
	}
	return n
}

func TestFailoverTrials(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a replica set")
	}
	n, budget, forced, syncReplicas := failoverTrialsEnv(t)
	// The Sentinels' default down-after, 2 s: with 1 s, a Sentinel that had just switched to a new master flagged
	// it down before its first PING round (tried here: chains of two and three spurious failovers per trial).
	d := startDeployment(t, topoSentinel)
	modes := []*trialMode{{name: "WAIT on", syncReplicas: syncReplicas}, {name: "WAIT off"}}
	for _, m := range modes {
		cfg := rlock.Config{SyncReplicas: m.syncReplicas}
		if m.syncReplicas > 0 {
			cfg.SyncTimeout = trialSyncTimeout
		}
		m.a, m.b = syncedClient(t, d, cfg), syncedClient(t, d, cfg)
	}
	start := time.Now()
	for i := 0; modes[0].trials < n || modes[1].trials < n; i++ {
		if budget > 0 && time.Since(start) > budget && modes[0].trials == modes[1].trials {
			t.Logf("LOCKSMITH_FAILOVER_BUDGET=%v spent: stopping after %d trials per mode", budget, modes[0].trials)
			break
		}
		for _, m := range modes {
			if m.trials >= n {
				continue
			}
			if i >= 2*n+10 {
				t.Fatalf("%s: %d trials refused A's grant: the replica set does not acknowledge within %v",
					m.name, m.refusedA, trialSyncTimeout)
			}
			trialStart := time.Now()
			o := runFailoverTrial(t, d, m, "trial-"+strconv.Itoa(i), forced)
			if o.refusedA {
				m.refusedA++
				continue
			}
			m.trials++
			m.took += time.Since(trialStart)
			m.failover += o.failover
			if o.double {
				m.doubles++
			}
			if o.aLost {
				m.lost++
			}
			if testing.Verbose() && (n <= 10 || m.trials%10 == 0 || o.double != (m.syncReplicas == 0)) {
				t.Logf("%s trial %d: B granted %v, double grant %v, kill in lag window %v, failover %v, B answered %v later, "+
					"reset %v", m.name, m.trials, o.bGranted, o.double, o.inWindow, o.failover.Round(time.Millisecond),
					o.verdict.Round(time.Millisecond), o.reset.Round(time.Millisecond))
			}
		}
	}
	on, off := modes[0], modes[1]
	t.Logf("failover trials: WAIT on: %d trials, %d double grants; WAIT off: %d trials, %d double grants",
		on.trials, on.doubles, off.trials, off.doubles)
	kind := "detected by the Sentinels"
	if forced {
		kind = "forced (SENTINEL FAILOVER right after the kill)"
	}
	for _, m := range modes {
		runs := time.Duration(max(m.trials, 1))
		t.Logf("%s: %v per trial on average, of which %v the failover, %s; A's grant refused (not acknowledged, "+
			"trial rerun) %d times; A's held context ended before B's answer in %d trials", m.name,
			(m.took / runs).Round(time.Millisecond), (m.failover / runs).Round(time.Millisecond), kind, m.refusedA, m.lost)
	}
	t.Logf("%d trials in %v", on.trials+off.trials, time.Since(start).Round(time.Second))
	if on.doubles > 0 {
		t.Errorf("WAIT on: %d double grants in %d trials, want 0", on.doubles, on.trials)
	}
}

// runFailoverTrial runs one trial (see the top of the file) on lock name and leaves the replica set healthy and
// empty.
func runFailoverTrial(t *testing.T, d *deployment, m *trialMode, name string, forced bool) trialOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var o trialOutcome
	master, err := d.rs.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replicas, err := d.rs.Replicas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pausedAt := time.Now()
	for _, r := range replicas {
		if _, err := r.Do(ctx, "CLIENT", "PAUSE", strconv.Itoa(int(trialLag/time.Millisecond)), "WRITE"); err != nil {
			t.Fatalf("CLIENT PAUSE on replica %s: %v", r.Addr(), err)
		}
	}
	held, err := m.a.Lock(name).TryLock(ctx, 0, trialLease)
	if err != nil {
		var re *rlock.ReplicationError
		if m.syncReplicas > 0 && errors.As(err, &re) {
			t.Logf("%s: A's grant was not acknowledged in time (%v): trial rerun", m.name, err)
			d.reset(t) // its WAIT outlasts the replicas' pause
			return trialOutcome{refusedA: true}
		}
		t.Fatalf("%s: A's TryLock: %v", m.name, err)
	}
	if err := master.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	o.inWindow = killedAt.Sub(pausedAt) < trialLag
	if err := failOver(ctx, d.rs, master, forced); err != nil {
		t.Fatalf("%s: no failover after the kill of %s: %v", m.name, master.Addr(), err)
	}
	promotedAt := time.Now()
	o.failover = promotedAt.Sub(killedAt)

	bHeld, granted, err := verdict(ctx, m.b.Lock(name))
	if err != nil {
		t.Fatalf("%s: B got neither a grant nor a refusal within %v of the failover: %v", m.name, trialVerdictWait, err)
	}
	o.verdict = time.Since(promotedAt)
	o.aLost = held.Err() != nil
	o.bGranted = granted
	o.double = granted && held.Err() == nil

	if granted {
		if err := m.b.Lock(name).Unlock(bHeld); err != nil {
			t.Errorf("%s: B's Unlock: %v", m.name, err)
		}
	} else if err := unlockAfterFailover(ctx, m.a.Lock(name), held); err != nil {
		// B was refused: the grant is on the new master and A, its owner, must be able to release it.
		t.Errorf("%s: A's Unlock after the failover: %v", m.name, err)
	}
	// The killed master comes back as a replica (fresh: no persistence), and the next trial starts clean.
	resetAt := time.Now()
	if err := d.rs.Rejoin(ctx, master); err != nil {
		t.Fatalf("rejoin of %s: %v", master.Addr(), err)
	}
	d.reset(t)
	o.reset = time.Since(resetAt)
	return o
}

// failOver waits until the Sentinels have replaced the killed master old. forced: it asks them first with
// SENTINEL FAILOVER (unless they have started a failover of their own meanwhile: INPROG). It blocks until
// another node is master or ctx ends.
func failOver(ctx context.Context, rs *redistest.ReplicaSet, old *redistest.Server, forced bool) error {
	if forced {
		_, _, err := rs.Failover(ctx)
		var re *redistest.ReplyError
		if err == nil || !errors.As(err, &re) || re.Prefix() != "INPROG" {
			return err
		}
	}
	for {
		err := promotedSince(ctx, rs, old)
		if err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond) // polls other processes' state: nothing to wait on
	}
}

// verdict tries l with TryLock(wait 0) until the server answers it — a grant or a refusal — retrying transport
// errors and unacknowledged grants (the client is still finding the new master, or its replica is still
// attaching) for at most trialVerdictWait.
func verdict(ctx context.Context, l *rlock.Lock) (held context.Context, granted bool, err error) {
	deadline := time.Now().Add(trialVerdictWait)
	for {
		held, err = l.TryLock(ctx, 0, trialLease)
		switch {
		case err == nil:
			return held, true, nil
		case errors.Is(err, rlock.ErrNotAcquired):
			return nil, false, nil
		case time.Now().After(deadline) || ctx.Err() != nil:
			return nil, false, err
		}
		time.Sleep(20 * time.Millisecond) // the client reconnects on its own; no event to wait on here
	}
}

// unlockAfterFailover releases held, retrying transport errors while the client finds the new master (release
// is safe to retry: it is conditional on the hold count the owner expects, see rlock's "Release and retries").
func unlockAfterFailover(ctx context.Context, l *rlock.Lock, held context.Context) error {
	deadline := time.Now().Add(trialVerdictWait)
	for {
		err := l.Unlock(held)
		if err == nil || errors.Is(err, rlock.ErrNotHeld) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond) // as in verdict
	}
}

// BenchmarkLockClusterVsSingle runs uncontended Lock+Unlock pairs (watchdog locks, one lock per goroutine, the
// names spread over the slots) from G goroutines through one rlock.Client, against one standalone server and a
// six-node cluster (three masters) started in the same run, one right after the other, so both see the same
// machine. One op = one pair.
//
//	go test -run XXX -bench BenchmarkLockClusterVsSingle -benchtime 3s ./integration
func BenchmarkLockClusterVsSingle(b *testing.B) {
	single := redistest.Start(b)
	cluster := &deployment{name: topoCluster, cl: redistest.StartCluster(b)}
	for _, g := range []int{64} {
		for _, topo := range []string{"single", "cluster"} {
			b.Run(topo+"/G="+strconv.Itoa(g), func(b *testing.B) {
				var srv server = single
				if topo == "cluster" {
					srv = cluster
				}
				c, err := rlock.NewClient(lockConfig(srv, rlock.Config{}))
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				lockPairs(b, c, g)
			})
		}
	}
}

// lockPairs runs b.N Lock+Unlock pairs from g goroutines, goroutine i on lock "bench-i", and reports pairs/s.
func lockPairs(b *testing.B, c *rlock.Client, g int) {
	ctx := context.Background()
	locks := make([]*rlock.Lock, g)
	for i := range locks {
		locks[i] = c.Lock("bench-" + strconv.Itoa(i))
		held, err := locks[i].Lock(ctx) // warm up: scripts loaded, connections to every node open
		if err != nil {
			b.Fatal(err)
		}
		if err := locks[i].Unlock(held); err != nil {
			b.Fatal(err)
		}
	}
	var (
		next   atomic.Int64
		failed atomic.Pointer[error]
		wg     sync.WaitGroup
	)
	b.ReportAllocs()
	b.ResetTimer()
	t0 := time.Now()
	for _, l := range locks {
		wg.Add(1)
		go func() { // owned by lockPairs: ends after b.N pairs in all or on an error; waited for by wg
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				held, err := l.Lock(ctx)
				if err == nil {
					err = l.Unlock(held)
				}
				if err != nil {
					err = fmt.Errorf("%s: %w", l.Name(), err)
					failed.Store(&err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "pairs/s")
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
}

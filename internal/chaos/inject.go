package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/internal/faultproxy"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// runner carries out one run: it spawns workers, injects the faults on schedule and samples the server.
type runner struct {
	cfg     *RunConfig
	srv     *redistest.Server
	proxies [2]*faultproxy.Proxy
	ps      *procs

	mu      sync.Mutex // guards next, faults and samples
	next    int        // index of the next worker
	faults  []Fault
	samples []ServerSample
}

// spawn starts the next worker behind the proxy of group.
func (r *runner) spawn(group int) (*proc, error) {
	r.mu.Lock()
	index := r.next
	r.next++
	r.mu.Unlock()
	return r.ps.start(index, group, r.proxies[group].Addr())
}

func (r *runner) record(f Fault) {
	r.mu.Lock()
	r.faults = append(r.faults, f)
	r.mu.Unlock()
	r.cfg.logf("chaos: fault %s lasted %v %s", f.Kind, f.Duration().Round(time.Millisecond), f.Detail)
}

// schedule lets the workers run for the configured duration, injecting one fault every FaultEvery after the
// warm-up, cycling through the configured kinds. The waits here are the schedule itself (how long the load runs
// between faults), not synchronisation.
func (r *runner) schedule(ctx context.Context) {
	cfg := r.cfg
	start := time.Now()
	end := start.Add(cfg.Duration)
	// No fault starts unless it ends a longest lease (plus a second) before the end of the run: its recovery
	// could not be seen.
	settle := max(cfg.Worker.Watchdog, cfg.Worker.Lease) + time.Second
	next := start.Add(cfg.Warmup)
	for i := 0; ; i++ {
		if len(cfg.Faults) == 0 || !next.Add(r.faultLength(cfg.Faults[i%len(cfg.Faults)])+settle).Before(end) {
			sleepUntil(ctx, end)
			return
		}
		if !sleepUntil(ctx, next) {
			return
		}
		kind := cfg.Faults[i%len(cfg.Faults)]
		if err := r.inject(ctx, kind); err != nil {
			cfg.logf("chaos: fault %s: %v", kind, err)
		}
		next = next.Add(cfg.FaultEvery)
		if now := time.Now(); next.Before(now) {
			next = now.Add(cfg.FaultEvery / 2)
		}
	}
}

// faultLength is about how long a fault of kind lasts.
func (r *runner) faultLength(kind FaultKind) time.Duration {
	switch kind {
	case FaultPartition:
		return r.cfg.PartitionFor
	case FaultLatency:
		return r.cfg.LatencyFor
	case FaultRestartDelayed:
		return r.cfg.DelayedDown
	}
	return 100 * time.Millisecond
}

// sleepUntil waits until t or until ctx ends; it reports whether t was reached.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// inject carries out one fault and records it.
func (r *runner) inject(ctx context.Context, kind FaultKind) error {
	cfg := r.cfg
	f := Fault{Kind: kind}
	switch kind {
	case FaultKillHolder:
		p, lock := r.findHolder(ctx)
		if p == nil {
			return fmt.Errorf("no worker held a lock")
		}
		f.Start = Now()
		p.kill()
		f.End = Now()
		f.Procs = []int{p.info.Index}
		f.Detail = fmt.Sprintf("worker %d (pid %d) holding %s", p.info.Index, p.info.PID, lock)
		r.record(f)
		// Keep the load up: a new worker takes the killed one's place behind the same proxy.
		if _, err := r.spawn(p.group); err != nil {
			return err
		}
		return nil
	case FaultRestartPersist, FaultRestartDelayed, FaultRestartNoPersist:
		f.Start = Now()
		if err := r.srv.Kill(); err != nil {
			return err
		}
		if kind != FaultRestartPersist {
			if err := r.forgetData(); err != nil {
				return err
			}
		}
		if kind == FaultRestartDelayed {
			sleepUntil(context.Background(), time.Now().Add(cfg.DelayedDown))
		}
		err := r.srv.Restart()
		f.End = Now()
		r.record(f)
		return err
	case FaultClientKill, FaultClientKillPubSub:
		typ := "normal"
		if kind == FaultClientKillPubSub {
			typ = "pubsub"
		}
		f.Start = Now()
		n, err := r.srv.DoInt(ctx, "CLIENT", "KILL", "TYPE", typ)
		f.End = Now()
		f.Detail = fmt.Sprintf("%d connections", n)
		r.record(f)
		return err
	case FaultScriptFlush:
		f.Start = Now()
		_, err := r.srv.Do(ctx, "SCRIPT", "FLUSH")
		f.End = f.Start
		r.record(f)
		return err
	case FaultPartition, FaultLatency:
		for _, p := range r.ps.live(0) {
			f.Procs = append(f.Procs, p.info.Index)
		}
		px := r.proxies[0]
		f.Start = Now()
		if kind == FaultPartition {
			px.Partition(0)
			sleepUntil(context.Background(), time.Now().Add(cfg.PartitionFor))
			px.Restore()
			f.Detail = fmt.Sprintf("proxy A black-holed for %v", cfg.PartitionFor)
		} else {
			px.SetLatency(faultproxy.Both, cfg.LatencySpike)
			sleepUntil(context.Background(), time.Now().Add(cfg.LatencyFor))
			px.SetLatency(faultproxy.Both, 0)
			f.Detail = fmt.Sprintf("proxy A +%v each way for %v", cfg.LatencySpike, cfg.LatencyFor)
		}
		f.End = Now()
		r.record(f)
		return nil
	}
	return fmt.Errorf("unknown fault kind %q", kind)
}

// forgetData removes the server's persistence files while it is down, so that it restarts empty: a restart
// without persistence, even on a server started with the append-only file.
func (r *runner) forgetData() error {
	dir := r.srv.Dir()
	for _, name := range []string{"appendonlydir", "dump.rdb", "appendonly.aof"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// findHolder returns a live worker that holds one of the locks right now (from the lock hashes on the server:
// the field is "<clientID>:<owner>"), trying for up to a second; it prefers a random one.
func (r *runner) findHolder(ctx context.Context) (*proc, string) {
	names := r.cfg.lockNames()
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, i := range rand.Perm(len(names)) {
			m, err := r.srv.DoMap(ctx, "HGETALL", names[i])
			if err != nil {
				continue
			}
			for field := range m {
				if k := strings.LastIndexByte(field, ':'); k > 0 {
					if p := r.ps.byClient(field[:k]); p != nil {
						return p, names[i]
					}
				}
			}
		}
	}
	return nil, ""
}

// sample records the server's keys, channels and clients every SampleEvery until stop closes.
func (r *runner) sample(stop <-chan struct{}) {
	tick := time.NewTicker(r.cfg.SampleEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s := ServerSample{At: Now()}
		if n, err := r.srv.DoInt(ctx, "DBSIZE"); err == nil {
			s.Up, s.Keys = true, n
			if ch, err := r.srv.DoStrings(ctx, "PUBSUB", "CHANNELS"); err == nil {
				s.Channels = len(ch)
			}
			if info, err := r.srv.Info(ctx, "clients"); err == nil {
				s.Clients, _ = strconv.ParseInt(info["connected_clients"], 10, 64)
			}
			if info, err := r.srv.Info(ctx, "persistence"); err == nil {
				s.AOFDelayedFsync, _ = strconv.ParseInt(info["aof_delayed_fsync"], 10, 64)
			}
		}
		cancel()
		r.mu.Lock()
		r.samples = append(r.samples, s)
		r.mu.Unlock()
	}
}

// finalState waits, after every worker stopped, until the longest lease has passed (killed workers' locks end
// then) and records the lock keys and channels still on the server: both must be empty.
func (r *runner) finalState(res *Result) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	longest := max(r.cfg.Worker.Watchdog, r.cfg.Worker.Lease) + 500*time.Millisecond
	deadline := time.Now().Add(longest)
	for {
		keys, _ := r.srv.DoStrings(ctx, "KEYS", "chaos:lock:*")
		if len(keys) == 0 || !time.Now().Before(deadline) {
			res.LeftoverKeys = keys
			break
		}
		// Polling an external process's key expiry: no event to wait for (keyspace notifications would need a
		// subscription of their own for a once-per-run check).
		sleepUntil(ctx, time.Now().Add(100*time.Millisecond))
	}
	res.ChannelsAfter, _ = r.srv.DoStrings(ctx, "PUBSUB", "CHANNELS")
}

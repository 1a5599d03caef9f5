package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/internal/faultproxy"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// RunConfig configures one chaos run: a redis-server, two fault proxies in front of it, worker processes behind
// them, and faults injected on a schedule while the workers run.
type RunConfig struct {
	Dir        string        // logs, fault log and report go here (must exist)
	Workers    int           // worker processes at the start (default 6); half behind each proxy
	Goroutines int           // per worker (default 3)
	Locks      int           // lock names (default 4)
	Duration   time.Duration // how long the workers run (default 15 s)
	Warmup     time.Duration // before the first fault (default 2 s)
	FaultEvery time.Duration // one fault every FaultEvery, cycling through Faults (default 4 s)
	Faults     []FaultKind   // the schedule; empty: no faults
	// Persistence starts redis-server with the append-only file (required by FaultRestartPersist). The
	// data-loss restarts delete the file before restarting, so every kind can run against one server.
	Persistence bool
	// AppendFsync is the appendfsync policy with Persistence (default "always"). With "everysec" (Redis' and
	// redistest's default) Redis may postpone writing the AOF for up to 2 s while a background fsync is slow and
	// still reply to clients, so a crash can lose grants it acknowledged: the 10-minute soak saw a SIGKILLed
	// server come back without the last 0.7 s of grants (tokens went back by 16 to 24 on every lock). Only
	// "always" makes a crash forget nothing a client was told.
	AppendFsync string
	Seed        uint64
	// Worker is the workers' configuration (Proc, Addr, Locks, LogPath and Seed are set per worker). Its Plain
	// and LongHolds fractions default to 0.3 and 0.05 here; give a negative value for none.
	Worker WorkerConfig

	// PartitionFor is how long a partition lasts (default 2 × the longest lease: longer than any lease).
	PartitionFor time.Duration
	// LatencySpike is the latency added during a latency fault (default 3 × the response timeout), for
	// LatencyFor (default 2 × the spike).
	LatencySpike, LatencyFor time.Duration
	// DelayedDown is how long a delayed restart keeps the server down (default the longest lease + 500 ms).
	DelayedDown time.Duration
	// StartTimeout bounds a worker's start (default 20 s); StopTimeout its clean exit after SIGTERM (default
	// the wait bound + 10 s).
	StartTimeout, StopTimeout time.Duration
	// SampleEvery is the server sampling period (keys, channels, clients; default 1 s).
	SampleEvery time.Duration

	// Command returns the command that runs a worker with args (WorkerMain's flags). Required.
	Command func(args []string) *exec.Cmd
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
	// Check tunes the checker.
	Check Options
}

func (c *RunConfig) defaults() error {
	if c.Command == nil || c.Dir == "" {
		return errors.New("chaos: RunConfig needs Command and Dir")
	}
	c.Worker.defaults()
	if c.Worker.Plain == 0 {
		c.Worker.Plain = 0.3
	}
	if c.Worker.LongHolds == 0 {
		c.Worker.LongHolds = 0.005
	}
	if c.Worker.UnlockLost == 0 {
		c.Worker.UnlockLost = 0.5
	}
	c.Worker.Plain, c.Worker.LongHolds = max(c.Worker.Plain, 0), max(c.Worker.LongHolds, 0)
	c.Worker.UnlockLost = max(c.Worker.UnlockLost, 0)
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	setInt(&c.Workers, 6)
	setInt(&c.Goroutines, 3)
	setInt(&c.Locks, 4)
	setDur(&c.Duration, 15*time.Second)
	setDur(&c.Warmup, 2*time.Second)
	setDur(&c.FaultEvery, 4*time.Second)
	longest := max(c.Worker.Watchdog, c.Worker.Lease)
	setDur(&c.PartitionFor, 2*longest)
	setDur(&c.LatencySpike, 3*c.Worker.ResponseTimeout)
	setDur(&c.LatencyFor, 2*c.LatencySpike)
	setDur(&c.DelayedDown, longest+500*time.Millisecond)
	setDur(&c.StartTimeout, 20*time.Second)
	setDur(&c.StopTimeout, c.Worker.WaitBound+10*time.Second)
	setDur(&c.SampleEvery, time.Second)
	if c.AppendFsync == "" {
		c.AppendFsync = "always"
	}
	if c.Check.WaitTolerance == 0 {
		c.Check.WaitTolerance = c.Worker.Tolerance
	}
	if c.Check.UnsafeRestartBound == 0 {
		// A watchdog holder learns that an empty server lost its lock from its next renewal: due at most a third
		// of the watchdog timeout after the last one, batched for up to a thirtieth, retried every RetryDelay
		// (200 ms) while the connection comes back, each attempt bounded by the response timeout. Half the
		// watchdog timeout plus two response timeouts and 500 ms covers it; the local expiry (the whole
		// watchdog timeout) is the hard backstop.
		c.Check.UnsafeRestartBound = c.Worker.Watchdog/2 + 2*c.Worker.ResponseTimeout + 500*time.Millisecond
	}
	for _, k := range c.Faults {
		if k == FaultRestartPersist && !c.Persistence {
			return fmt.Errorf("chaos: fault %s needs Persistence", k)
		}
	}
	return nil
}

func (c *RunConfig) lockNames() []string {
	names := make([]string, c.Locks)
	for i := range names {
		names[i] = "chaos:lock:" + strconv.Itoa(i)
	}
	return names
}

func (c *RunConfig) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// ServerSample is one sample of the server's state during a run.
type ServerSample struct {
	At       int64
	Keys     int64 // DBSIZE: lock keys and token keys
	Channels int   // PUBSUB CHANNELS
	Clients  int64 // connected_clients
	Up       bool  // false while the server was down (a restart fault)
	// AOFDelayedFsync is INFO persistence aof_delayed_fsync: how often (since the server's start) Redis wrote the
	// AOF late because a background fsync was slow — with appendfsync everysec, the windows in which a crash
	// loses acknowledged writes.
	AOFDelayedFsync int64
}

// Result is what a run produced.
type Result struct {
	Input   Input
	Report  *Report
	Samples []ServerSample
	// Locks and Workers are the run's lock names and worker processes alive at once (RunConfig's, defaults
	// applied): the bounds of Flatness scale with them.
	Locks, Workers int
	// LeftoverKeys are the lock keys still on the server once every worker stopped and the longest lease had
	// passed (token keys excluded): a lock nobody holds any more that the server still has.
	LeftoverKeys []string
	// ChannelsAfter are the PUBSUB CHANNELS after every worker stopped: subscriptions nobody closed.
	ChannelsAfter []string
}

// Run runs the chaos scenario described by cfg and checks the log. It blocks for about cfg.Duration plus the
// workers' stop and the final checks, or until ctx ends (the workers are then stopped early and the log checked
// all the same). The error reports a run that could not be carried out (a server or worker that did not start);
// the verdict is in Result.Report.
func Run(ctx context.Context, cfg RunConfig) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	var opts []redistest.Option
	if cfg.Persistence {
		opts = append(opts, redistest.WithPersistence(), redistest.WithConfig("appendfsync", cfg.AppendFsync))
	}
	srv, err := redistest.StartServer(opts...)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	var proxies [2]*faultproxy.Proxy
	for i := range proxies {
		if proxies[i], err = faultproxy.New(srv.Addr()); err != nil {
			return nil, err
		}
		defer proxies[i].Close()
	}
	ps := &procs{cfg: &cfg}
	r := &runner{cfg: &cfg, srv: srv, proxies: proxies, ps: ps}
	defer ps.stopAll(cfg.StopTimeout) // on an early error; a no-op after the regular stop

	for i := range cfg.Workers {
		if _, err := r.spawn(i % 2); err != nil {
			return nil, err
		}
	}
	cfg.logf("chaos: %d workers × %d goroutines on %d locks, server %s, proxies %s %s",
		cfg.Workers, cfg.Goroutines, cfg.Locks, srv.Addr(), proxies[0].Addr(), proxies[1].Addr())

	samplerDone := make(chan struct{})
	samplerStop := make(chan struct{})
	go func() { // owner: Run; exits when samplerStop closes
		defer close(samplerDone)
		r.sample(samplerStop)
	}()

	r.schedule(ctx)

	ps.stopAll(cfg.StopTimeout)
	close(samplerStop)
	<-samplerDone
	for _, p := range proxies {
		p.Restore()
	}
	if !srv.Running() {
		// A run cut short during a restart fault: bring the server back for the final checks.
		srv.Restart()
	}

	res := &Result{Samples: r.samples, Locks: cfg.Locks, Workers: cfg.Workers}
	recs, rerr := ps.records()
	res.Input = Input{Records: recs, Faults: r.faults, Procs: ps.infos()}
	res.Report = Check(res.Input, cfg.Check)
	if rerr != nil {
		res.Report.Violations = append(res.Report.Violations, Violation{Kind: "log", Detail: rerr.Error()})
	}
	if err := WriteFaults(filepath.Join(cfg.Dir, "faults.json"), r.faults); err != nil {
		return res, err
	}
	if err := writeProcs(cfg.Dir, res.Input.Procs); err != nil {
		return res, err
	}
	r.finalState(res)
	// The server's directory goes with Close: keep the end of its log with the workers' logs.
	if err := os.WriteFile(filepath.Join(cfg.Dir, "redis.log"), []byte(srv.LogTail()), 0o644); err != nil {
		return res, err
	}
	return res, nil
}

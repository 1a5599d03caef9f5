package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// FaultKind names a kind of fault the orchestrator injects.
type FaultKind string

// The fault kinds.
const (
	// FaultKillHolder SIGKILLs a worker process while it holds locks. Its holds end at the kill (it can no
	// longer act); the server frees them when their leases end.
	FaultKillHolder FaultKind = "sigkill"
	// FaultRestartPersist crashes redis-server (SIGKILL) and restarts it with the append-only file, written with
	// appendfsync always (RunConfig.AppendFsync): nothing a client was told is forgotten, so mutual exclusion and
	// token order must hold straight across it.
	FaultRestartPersist FaultKind = "restart-persist"
	// FaultRestartDelayed crashes redis-server without persistence and keeps it down for longer than the
	// longest lease before restarting it (Redis' documented "delayed restart"): every holder's context ends
	// while it is down, so no two holders may overlap; tokens start again from 1 (a new epoch).
	FaultRestartDelayed FaultKind = "restart-delayed"
	// FaultRestartNoPersist crashes redis-server without persistence and restarts it at once: the server forgets
	// every lock while their holders still believe they hold them. Overlaps between a holder from before the
	// restart and one from after are the documented cost of that configuration; the checker bounds how long
	// the old holder may go on believing (Options.UnsafeRestartBound).
	FaultRestartNoPersist FaultKind = "restart-nopersist"
	// FaultClientKill kills every normal client connection (CLIENT KILL TYPE normal).
	FaultClientKill FaultKind = "client-kill"
	// FaultClientKillPubSub kills every pub/sub connection (CLIENT KILL TYPE pubsub): waiters lose their
	// subscriptions and must get them back.
	FaultClientKillPubSub FaultKind = "client-kill-pubsub"
	// FaultScriptFlush empties the server's script cache (SCRIPT FLUSH): every EVALSHA gets NOSCRIPT once.
	FaultScriptFlush FaultKind = "script-flush"
	// FaultPartition black-holes the proxy in front of some workers for longer than the lease: their holders
	// must stop believing before their leases end on the server, while workers on the other side take over.
	FaultPartition FaultKind = "partition"
	// FaultLatency adds latency longer than the response timeout to the proxy for a while.
	FaultLatency FaultKind = "latency"
)

// AllFaultKinds lists every kind, in the order the short CI run goes through them.
var AllFaultKinds = []FaultKind{
	FaultKillHolder, FaultRestartPersist, FaultRestartDelayed, FaultRestartNoPersist, FaultClientKill,
	FaultClientKillPubSub, FaultScriptFlush, FaultPartition, FaultLatency,
}

// Fault is one injected fault. Times are Now() readings.
type Fault struct {
	Kind  FaultKind `json:"kind"`
	Start int64     `json:"start"` // when the fault began (the kill, the partition...)
	End   int64     `json:"end"`   // when it was lifted (the server answers again, the partition healed); = Start for instant faults
	// Procs are the worker indexes the fault hit (SIGKILL: the killed worker; partition, latency: the workers
	// behind the faulted proxy). Empty: all.
	Procs  []int  `json:"procs,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Duration is how long the fault lasted.
func (f Fault) Duration() time.Duration { return time.Duration(f.End - f.Start) }

// forgetsData reports whether the fault makes the server forget every lock and token (a new epoch).
func (f Fault) forgetsData() bool {
	return f.Kind == FaultRestartDelayed || f.Kind == FaultRestartNoPersist
}

// hits reports whether the fault hit worker proc.
func (f Fault) hits(proc int) bool {
	if len(f.Procs) == 0 {
		return true
	}
	for _, p := range f.Procs {
		if p == proc {
			return true
		}
	}
	return false
}

// WriteFaults writes the fault log as a JSON array.
func WriteFaults(path string, faults []Fault) error {
	b, err := json.MarshalIndent(faults, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("chaos: write faults: %w", err)
	}
	return nil
}

// ReadFaults reads a fault log written by WriteFaults.
func ReadFaults(path string) ([]Fault, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("chaos: read faults: %w", err)
	}
	var faults []Fault
	if err := json.Unmarshal(b, &faults); err != nil {
		return nil, fmt.Errorf("chaos: %s: %w", path, err)
	}
	return faults, nil
}

package workload

import "fmt"

// Record is the result of one case: one (workload, library, goroutines, keys)
// run in its own process. The case process fills the client-side fields; the
// orchestrator adds the server-side and machine-wide ones (server_cpu,
// other_cpu, command rates) from samples taken at the window's edges.
//
// The fields without omitempty are the report's schema: they are always
// present (zero when they do not apply to the workload).
type Record struct {
	Workload   string `json:"workload"`
	Library    string `json:"library"`
	Goroutines int    `json:"goroutines"`
	Keys       int    `json:"keys"`

	// GOMAXPROCS is what the case process ran with; GOMAXPROCSSet tells that
	// the orchestrator chose it (Spec.Procs) rather than Go's default.
	GOMAXPROCS    int  `json:"gomaxprocs"`
	GOMAXPROCSSet bool `json:"gomaxprocs_set,omitempty"`

	// Config is how the adapter configured the library (Describer).
	Config string `json:"config,omitempty"`

	// NotApplicable is set, with the reason, when the library lacks what the
	// workload needs (no watchdog, no async API); nothing else is measured.
	NotApplicable string `json:"not_applicable,omitempty"`

	// Ops counts what the workload counts as one operation, completed in the
	// window: a lock+unlock pair (W1, W5, raw), an acquisition (W2, W3), a
	// hand-off (W4). For W3, ops_per_sec is the acquisition rate while taking
	// the N locks and the latencies are those acquisitions.
	Ops       int64   `json:"ops"`
	WindowSec float64 `json:"window_sec"`
	OpsPerSec float64 `json:"ops_per_sec"`
	// Repeats is the number of runs of the case a report's record combines
	// (report.Aggregate): OpsPerSec is then their median, with the min–max
	// spread and every run's rate; 0 or 1 for a single run.
	Repeats       int       `json:"repeats,omitempty"`
	OpsPerSecMin  float64   `json:"ops_per_sec_min,omitempty"`
	OpsPerSecMax  float64   `json:"ops_per_sec_max,omitempty"`
	OpsPerSecRuns []float64 `json:"ops_per_sec_runs,omitempty"`

	// Latencies in microseconds, from an HDR histogram of the operations
	// completed in the window (W2: wait until held; W4: unlock to next holder).
	P50us  float64 `json:"p50_us"`
	P99us  float64 `json:"p99_us"`
	P999us float64 `json:"p999_us"`
	MaxUs  float64 `json:"max_us"`

	Violations       int64   `json:"violations"`
	Lost             int64   `json:"lost"`
	GoroutinesPeak   int     `json:"goroutines_peak"`
	HeapBytesPerLock float64 `json:"heap_bytes_per_lock"`
	RenewCmdsPerSec  float64 `json:"renew_cmds_per_sec"`
	ClientCPU        float64 `json:"client_cpu"`
	ServerCPU        float64 `json:"server_cpu"`
	OtherCPU         float64 `json:"other_cpu"`

	// Errors counts failed calls that were not give-ups or the end of the
	// window; ErrorSample is the first one's message.
	Errors      int64  `json:"errors"`
	ErrorSample string `json:"error_sample,omitempty"`

	// Commands. ClientCmds is the number of commands the client sent in the
	// window (-1 when the adapter cannot count them; the orchestrator then
	// estimates it from the server's statistics and sets ClientCmdsEstimated).
	ClientCmds          int64   `json:"client_cmds"`
	ClientCmdsPerOp     float64 `json:"client_cmds_per_op"`
	ClientCmdsEstimated bool    `json:"client_cmds_estimated,omitempty"`
	ServerCmdsPerOp     float64 `json:"server_cmds_per_op"`
	ServerCmdsPerSec    float64 `json:"server_cmds_per_sec"`

	// Stalled (W1, W5, raw): operations in flight for more than StallAge when
	// the window closed, with the oldest one's age.
	Stalled         int     `json:"stalled"`
	StalledOldestMs float64 `json:"stalled_oldest_ms"`
	// Abandoned: workers that had not returned StopGrace after the end of the
	// window was signalled to them (a library ignoring its context).
	Abandoned int `json:"abandoned"`

	// W2 and W4: contention and fairness.
	Waiting         int     `json:"waiting_over_1s"`
	WaitingOldestMs float64 `json:"waiting_oldest_ms"`
	ReacqPct        float64 `json:"reacq_pct"`
	Jain            float64 `json:"jain"`
	MinPerG         int64   `json:"min_per_goroutine"`
	MaxPerG         int64   `json:"max_per_goroutine"`
	GaveUps         int64   `json:"gave_ups"`
	CounterExpected int64   `json:"counter_expected"`
	CounterGot      int64   `json:"counter_got"`
	// The server-side check (Spec.CheckAddr): owner markers found taken on
	// entry or changed on exit (counted in Violations too), and the
	// non-atomic server counter against the acquisitions whose check
	// completed (every key that differs is a violation).
	MarkerViolations      int64   `json:"marker_violations,omitempty"`
	ServerCounterExpected int64   `json:"server_counter_expected,omitempty"`
	ServerCounterGot      int64   `json:"server_counter_got,omitempty"`
	CSHoldUs              float64 `json:"cs_hold_us,omitempty"`
	// CheckScripts counts the check's scripts run in the window (EVALSHA on
	// connections of their own: never in ClientCmds, and subtracted from the
	// estimate made from the server's statistics; W4's BLPOP wake-ups are not
	// in that estimate).
	CheckScripts int64 `json:"check_scripts,omitempty"`

	// W2x and W4x: Processes processes of Goroutines goroutines each. Jain
	// and min/max per goroutine are over every goroutine of every process;
	// JainPerProcess over the processes' acquisitions; LongestRun is the
	// longest run of consecutive grants (by the server's grant order, inside
	// the window) to one process.
	Processes      int     `json:"processes,omitempty"`
	JainPerProcess float64 `json:"jain_per_process,omitempty"`
	MinPerProcess  int64   `json:"min_per_process,omitempty"`
	MaxPerProcess  int64   `json:"max_per_process,omitempty"`
	LongestRun     int     `json:"longest_run,omitempty"`

	// W3: many held locks.
	Acquired          int     `json:"acquired"`
	AcquireSec        float64 `json:"acquire_sec"`
	ReleaseSec        float64 `json:"release_sec"`
	HoldSec           float64 `json:"hold_sec"`
	LostLib           int64   `json:"lost_lib"`
	LostServer        int64   `json:"lost_server"`
	RenewCmdsExpected float64 `json:"renew_cmds_expected_per_sec"`
	// LocksRenewedPerSec: the expiry commands (PEXPIRE, PEXPIREAT, EXPIRE,
	// EXPIREAT) the server ran per second during the hold, inside scripts
	// included: one per lock renewed, whatever the batching.
	LocksRenewedPerSec float64  `json:"locks_renewed_per_sec,omitempty"`
	GoroutinesBase     int      `json:"goroutines_base"`
	GoroutinesHold     int      `json:"goroutines_hold"`
	HeapBaseBytes      uint64   `json:"heap_base_bytes"`
	HeapHoldBytes      uint64   `json:"heap_hold_bytes"`
	StackHoldBytes     uint64   `json:"stack_hold_bytes"`
	RSSHoldBytes       uint64   `json:"rss_hold_bytes"`
	HeapPeakBytes      uint64   `json:"heap_peak_bytes"`
	ClientCPUSeconds   float64  `json:"client_cpu_seconds"`
	LatencyCount       int64    `json:"latency_count"`
	LatencyCDF         []Point  `json:"latency_cdf,omitempty"`
	LatencyHistogram   []Bar    `json:"latency_histogram,omitempty"`
	Attempts           int      `json:"attempts"`
	Disturbed          bool     `json:"disturbed"`
	QuietWaitSec       float64  `json:"quiet_wait_sec"`
	Notes              []string `json:"notes,omitempty"`
}

// Point is one point of a latency CDF: the latency in microseconds at which
// Pct percent of the operations had completed.
type Point struct {
	Us  float64 `json:"us"`
	Pct float64 `json:"pct"`
}

// Bar is one bucket of a latency histogram: operations whose latency was in
// (previous bucket's UpToUs, UpToUs].
type Bar struct {
	UpToUs float64 `json:"up_to_us"`
	Count  int64   `json:"count"`
}

// Label names the record's library for tables and charts: the library, with
// the GOMAXPROCS it ran with when the orchestrator chose it ("ours GOMAXPROCS=1").
func (r Record) Label() string {
	if r.GOMAXPROCSSet {
		return fmt.Sprintf("%s GOMAXPROCS=%d", r.Library, r.GOMAXPROCS)
	}
	return r.Library
}

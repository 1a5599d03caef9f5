// Package report holds the benchmark report (the JSON document written by
// -json) and renders it: an aligned text table for the terminal, Markdown, and
// a self-contained HTML page with charts.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

// Report is the JSON document: one record per (workload, library,
// goroutines, keys), the server ceiling measured in the same run, and what
// the run was.
//
// With -repeat N, every case ran N times: Records holds one record per case
// combining its runs (Aggregate), Runs every run in the order they ran.
type Report struct {
	Meta    Meta              `json:"meta"`
	Ceiling Ceiling           `json:"ceiling"`
	Records []workload.Record `json:"records"`
	Runs    []workload.Record `json:"runs,omitempty"`
}

// Meta describes the run.
type Meta struct {
	Started      time.Time `json:"started"`
	Finished     time.Time `json:"finished"`
	Command      string    `json:"command"`
	GoVersion    string    `json:"go_version"`
	GOOS         string    `json:"goos"`
	GOARCH       string    `json:"goarch"`
	NumCPU       int       `json:"num_cpu"`
	CPUModel     string    `json:"cpu_model,omitempty"`
	RedisVersion string    `json:"redis_version"`
	ServerAddr   string    `json:"server_addr"`
	Embedded     bool      `json:"embedded_server"`
	Quick        bool      `json:"quick"`
	DurationSec  float64   `json:"duration_sec"`
	WarmupSec    float64   `json:"warmup_sec"`
	Workloads    []string  `json:"workloads"`
	Libraries    []string  `json:"libraries"`
	N            int       `json:"w3_n"`
	HoldSec      float64   `json:"w3_hold_sec"`
	TTLSec       float64   `json:"w3_ttl_sec"`
	LeaseSec     float64   `json:"lease_sec"`
	OtherMax     float64   `json:"other_cpu_max"`
	Scripts      string    `json:"scripts"`
	Repeat       int       `json:"repeat,omitempty"` // runs of every case
	Seed         int64     `json:"seed,omitempty"`   // of the run order (-seed)
	Notes        []string  `json:"notes,omitempty"`
}

// Ceiling is what the server itself sustains with each library's own lock
// commands: connections that each acquire and release one key of their own,
// pipelined (every release finds the lock held once, by that connection, and
// releases it), at pipeline depth 1 and 16. A kind is one library's command
// set (Kinds): rlock's scripts (ours and the raw baselines), redsync's SET NX
// and delete script, redislock's obtain and release scripts, rueidislock's
// acquire and delete scripts. Its pair rate at the deepest pipeline is the
// ÷ceiling divisor of the libraries that send those commands.
type Ceiling struct {
	// PairsPerSec is the rlock kind's pair rate at the deepest pipeline.
	PairsPerSec float64       `json:"pairs_per_sec"`
	Pipeline    int           `json:"pipeline"`
	Clients     int           `json:"clients"`
	Scripts     string        `json:"scripts"`
	Kinds       []CeilingKind `json:"kinds"`
	Runs        []CeilingRun  `json:"runs"`
	Error       string        `json:"error,omitempty"`
}

// CeilingKind is one library's lock commands and the pair rate the server
// sustains with them at the deepest pipeline.
type CeilingKind struct {
	Name        string   `json:"name"`
	Commands    string   `json:"commands"`
	Libraries   []string `json:"libraries"`
	PairsPerSec float64  `json:"pairs_per_sec"`
}

// CeilingRun is one measurement: a kind at a pipeline depth.
type CeilingRun struct {
	Kind     string `json:"kind"`
	Pipeline int    `json:"pipeline"`
	// Pairs completed in the window; PerSec is pairs per second.
	Pairs  int64   `json:"pairs"`
	PerSec float64 `json:"per_sec"`
	// Latency of one pipelined batch (Pipeline pairs) on one connection.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// Unexpected is the number of replies that were not a grant (to an
	// acquire) or a release of the lock (to a release): 0 when every release
	// found the lock held once.
	Unexpected int64   `json:"unexpected"`
	ServerCPU  float64 `json:"server_cpu"`
	ToolCPU    float64 `json:"tool_cpu"`
	OtherCPU   float64 `json:"other_cpu"`
	Attempts   int     `json:"attempts"`
	Disturbed  bool    `json:"disturbed"`
}

// Ceiling kinds.
const (
	CeilingRlock       = "rlock"
	CeilingRedsync     = "redsync"
	CeilingRedislock   = "redislock"
	CeilingRueidislock = "rueidislock"
)

// CeilingKindOf returns the ceiling kind of a library (its lock commands).
func CeilingKindOf(lib string) string {
	base, _, _ := strings.Cut(lib, ":")
	switch base {
	case "ours", "ours-conn", "rueidis", "goredis":
		return CeilingRlock
	case "redsync":
		return CeilingRedsync
	case "redislock":
		return CeilingRedislock
	case "rueidislock":
		return CeilingRueidislock
	}
	return ""
}

// For returns the pair ceiling of lib's kind (0 when not measured).
func (c Ceiling) For(lib string) float64 {
	k := CeilingKindOf(lib)
	for _, x := range c.Kinds {
		if x.Name == k {
			return x.PairsPerSec
		}
	}
	return 0
}

// Finish sets the kinds' pair rates and PairsPerSec from the deepest
// pipeline measured.
func (c *Ceiling) Finish() {
	for _, r := range c.Runs {
		c.Pipeline = max(c.Pipeline, r.Pipeline)
	}
	for i := range c.Kinds {
		c.Kinds[i].PairsPerSec = 0
		for _, r := range c.Runs {
			if r.Kind == c.Kinds[i].Name && r.Pipeline == c.Pipeline {
				c.Kinds[i].PairsPerSec = r.PerSec
			}
		}
		if c.Kinds[i].Name == CeilingRlock {
			c.PairsPerSec = c.Kinds[i].PairsPerSec
		}
	}
}

// WriteJSON writes r to path, indented.
func WriteJSON(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("report: encoding JSON: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// ReadJSON reads a report written by WriteJSON.
func ReadJSON(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("report: decoding %s: %w", path, err)
	}
	return &r, nil
}

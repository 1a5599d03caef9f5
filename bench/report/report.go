// Package report holds the benchmark report (the JSON document written by
// -json) and renders it: an aligned text table for the terminal, Markdown, and
// a self-contained HTML page with charts.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/locksmith-go/locksmith/bench/workload"
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

// Ceiling is what the server itself can do with the lock scripts:
// redis-benchmark sending EVALSHA of the acquire and release scripts from 50
// connections, at pipeline depth 1 and 16. The top-level figures are those of
// the deepest pipeline measured (the server's limit); PairsPerSec is the rate
// of acquire+release pairs one server core sustains at that depth,
// 1 / (1/acquire + 1/release).
type Ceiling struct {
	AcquirePerSec float64      `json:"acquire_per_sec"`
	ReleasePerSec float64      `json:"release_per_sec"`
	PairsPerSec   float64      `json:"pairs_per_sec"`
	Pipeline      int          `json:"pipeline"`
	Clients       int          `json:"clients"`
	Scripts       string       `json:"scripts"`
	Runs          []CeilingRun `json:"runs"`
	Error         string       `json:"error,omitempty"`
}

// CeilingRun is one redis-benchmark run.
type CeilingRun struct {
	Test     string `json:"test"` // ACQUIRE or RELEASE
	Pipeline int    `json:"pipeline"`
	N        int    `json:"n"`
	KeySpace int    `json:"key_space"` // -r: keys drawn from
	// Released counts the locks a RELEASE run deleted (each a full release:
	// del and publish); its other calls found a lock re-entered (count
	// mismatch) or none.
	Released  int     `json:"released,omitempty"`
	PerSec    float64 `json:"per_sec"`
	AvgMs     float64 `json:"avg_ms"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
	ServerCPU float64 `json:"server_cpu"`
	ToolCPU   float64 `json:"tool_cpu"`
	OtherCPU  float64 `json:"other_cpu"`
	Attempts  int     `json:"attempts"`
	Disturbed bool    `json:"disturbed"`
}

// PairsAt returns the pair rate at pipeline depth p (0 when not measured).
func (c Ceiling) PairsAt(p int) float64 {
	var acq, rel float64
	for _, r := range c.Runs {
		if r.Pipeline != p {
			continue
		}
		switch r.Test {
		case "ACQUIRE":
			acq = r.PerSec
		case "RELEASE":
			rel = r.PerSec
		}
	}
	return pairs(acq, rel)
}

func pairs(acq, rel float64) float64 {
	if acq <= 0 || rel <= 0 {
		return 0
	}
	return 1 / (1/acq + 1/rel)
}

// Finish sets the top-level figures from the deepest pipeline measured.
func (c *Ceiling) Finish() {
	for _, r := range c.Runs {
		if r.Pipeline < c.Pipeline {
			continue
		}
		if r.Pipeline > c.Pipeline {
			c.Pipeline, c.AcquirePerSec, c.ReleasePerSec = r.Pipeline, 0, 0
		}
		switch r.Test {
		case "ACQUIRE":
			c.AcquirePerSec = r.PerSec
		case "RELEASE":
			c.ReleasePerSec = r.PerSec
		}
	}
	c.PairsPerSec = pairs(c.AcquirePerSec, c.ReleasePerSec)
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

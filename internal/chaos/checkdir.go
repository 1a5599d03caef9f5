package chaos

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// procsFile is where Run saves the workers' ProcInfo, next to their logs and faults.json.
const procsFile = "procs.json"

// writeProcs saves the workers' ProcInfo in dir.
func writeProcs(dir string, procs []ProcInfo) error {
	b, err := json.MarshalIndent(procs, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, procsFile), b, 0o644)
}

// ReadDir reads a kept run (worker-*.log, faults.json, procs.json) back into an Input, so that Check can be run
// again on it, with other Options or a newer checker. Without procs.json (runs kept before it existed) the
// processes are rebuilt from the logs: a worker named by a SIGKILL fault died at that fault's end, and the others
// are taken to have exited at their exit record.
func ReadDir(dir string) (Input, error) {
	var in Input
	logs, err := filepath.Glob(filepath.Join(dir, "worker-*.log"))
	if err != nil || len(logs) == 0 {
		return in, fmt.Errorf("chaos: no worker logs in %s", dir)
	}
	slices.Sort(logs)
	for _, l := range logs {
		recs, err := ReadLogFile(l)
		if err != nil {
			return in, err
		}
		in.Records = append(in.Records, recs...)
	}
	if in.Faults, err = ReadFaults(filepath.Join(dir, "faults.json")); err != nil {
		return in, err
	}
	b, err := os.ReadFile(filepath.Join(dir, procsFile))
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &in.Procs); err != nil {
			return in, fmt.Errorf("chaos: %s: %w", procsFile, err)
		}
		return in, nil
	case !errors.Is(err, os.ErrNotExist):
		return in, err
	}
	byIndex := map[int]*ProcInfo{}
	for _, r := range in.Records {
		p := byIndex[r.Proc]
		if p == nil {
			p = &ProcInfo{Index: r.Proc}
			byIndex[r.Proc] = p
		}
		if r.Kind == KindExit {
			p.PID, p.Exited = r.PID, r.At
		}
	}
	for _, f := range in.Faults {
		if f.Kind == FaultKillHolder {
			for _, i := range f.Procs {
				if p := byIndex[i]; p != nil {
					p.Killed, p.Exited = true, f.End
				}
			}
		}
	}
	for _, p := range byIndex {
		in.Procs = append(in.Procs, *p)
	}
	slices.SortFunc(in.Procs, func(a, b ProcInfo) int { return a.Index - b.Index })
	return in, nil
}

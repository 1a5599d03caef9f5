package redistest

import "os"

// processGone reports whether no process has this pid any more (on Windows, opening it fails).
func processGone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	_ = p.Release()
	return false
}

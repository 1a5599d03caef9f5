package redistest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run when a goroutine leaks or when any redis-server child
// of this test binary is still alive after all tests closed their servers.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if left := redisChildren(); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "redistest: redis-server processes left behind: %v\n", left)
			code = 1
		}
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "redistest: goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// redisChildren lists the pids of redis-server processes whose parent is this
// test binary (read from /proc/PID/stat).
func redisChildren() []int {
	me := os.Getpid()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		comm := s[open+1 : close]
		rest := strings.Fields(s[close+1:])
		if len(rest) < 2 || !strings.HasPrefix(comm, "redis-") {
			continue
		}
		if ppid, _ := strconv.Atoi(rest[1]); ppid == me {
			pid, _ := strconv.Atoi(strings.Fields(s)[0])
			pids = append(pids, pid)
		}
	}
	return pids
}

package workload

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/internal/proccpu"
)

// ProcessCPU returns the CPU time (user + system) this process has used so
// far (getrusage(RUSAGE_SELF) on Unix, GetProcessTimes on Windows): every
// thread, the Go runtime's included.
func ProcessCPU() time.Duration { return proccpu.Used() }

// Cores converts CPU time used over a wall-clock interval into cores (1.0 =
// one core busy all the time). It returns 0 for an empty interval.
func Cores(cpu, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return cpu.Seconds() / wall.Seconds()
}

// residentBytes returns this process's resident set size from
// /proc/self/status (VmRSS), or 0 where that file does not exist.
func residentBytes() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "VmRSS:") {
			continue
		}
		fields := strings.Fields(line[len("VmRSS:"):])
		if len(fields) == 0 {
			return 0
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}

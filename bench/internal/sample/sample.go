// Package sample takes the orchestrator's measurements at the edges of a
// benchmark window and turns pairs of them into rates: machine-wide busy
// cores from /proc/stat, the server's CPU and per-command call counts from
// INFO, and "other CPU" (machine minus client minus server), the load of
// processes that are not part of the case.
package sample

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Machine is a reading of the first line of /proc/stat, in clock ticks.
type Machine struct {
	Busy  uint64 // user+nice+system+irq+softirq+steal
	Total uint64 // Busy + idle + iowait
}

// ParseProcStat parses the aggregate "cpu" line of /proc/stat. guest and
// guest_nice are already included in user and nice, so they are not added.
func ParseProcStat(text string) (Machine, error) {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || f[0] != "cpu" {
			continue
		}
		var v [8]uint64
		for i := range v {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return Machine{}, fmt.Errorf("sample: /proc/stat field %d: %w", i+1, err)
			}
			v[i] = n
		}
		user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
		busy := user + nice + system + irq + softirq + steal
		return Machine{Busy: busy, Total: busy + idle + iowait}, nil
	}
	return Machine{}, fmt.Errorf("sample: no aggregate cpu line in /proc/stat")
}

// ReadMachine reads /proc/stat.
func ReadMachine() (Machine, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Machine{}, err
	}
	return ParseProcStat(string(b))
}

// BusyCores returns how many cores were busy on average between a and b, on
// a machine with ncpu cores (the share of busy ticks times ncpu).
func BusyCores(a, b Machine, ncpu int) float64 {
	dt := float64(b.Total - a.Total)
	if b.Total <= a.Total || ncpu <= 0 {
		return 0
	}
	return float64(b.Busy-a.Busy) / dt * float64(ncpu)
}

// Server is what one INFO reply says about the server: its pid, its CPU time
// and the number of calls of every command so far.
type Server struct {
	PID     int
	CPU     time.Duration    // used_cpu_sys + used_cpu_user
	Calls   map[string]int64 // commandstats, by command name ("evalsha", "config|get")
	Version string
}

// ParseInfo parses the text of INFO (any sections; cpu, commandstats and
// server are used).
func ParseInfo(text string) (Server, error) {
	s := Server{Calls: map[string]int64{}}
	var sys, user float64
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var err error
		switch {
		case k == "process_id":
			s.PID, err = strconv.Atoi(v)
		case k == "redis_version":
			s.Version = v
		case k == "used_cpu_sys":
			sys, err = strconv.ParseFloat(v, 64)
		case k == "used_cpu_user":
			user, err = strconv.ParseFloat(v, 64)
		case strings.HasPrefix(k, "cmdstat_"):
			calls, ok := field(v, "calls")
			if !ok {
				return s, fmt.Errorf("sample: %s without calls", k)
			}
			s.Calls[strings.TrimPrefix(k, "cmdstat_")], err = strconv.ParseInt(calls, 10, 64)
		}
		if err != nil {
			return s, fmt.Errorf("sample: INFO %s: %w", k, err)
		}
	}
	s.CPU = time.Duration((sys + user) * float64(time.Second))
	return s, nil
}

// field returns the value of name in "a=1,b=2".
func field(list, name string) (string, bool) {
	for _, kv := range strings.Split(list, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k == name {
			return v, true
		}
	}
	return "", false
}

// Point is one sample: wall clock, machine and server.
type Point struct {
	At      time.Time
	Machine Machine
	Server  Server
}

// Window is what happened between two Points.
type Window struct {
	Wall         time.Duration
	MachineCores float64          // every process on the machine
	ServerCores  float64          // redis-server
	Calls        map[string]int64 // per command, the sampler's own INFO calls removed
	TotalCalls   int64
}

// Between computes the Window from a to b on a machine with ncpu cores. The
// INFO calls of the sampler itself (one per Point) are not counted.
func Between(a, b Point, ncpu int) Window {
	w := Window{Wall: b.At.Sub(a.At), Calls: map[string]int64{}}
	w.MachineCores = BusyCores(a.Machine, b.Machine, ncpu)
	if w.Wall > 0 {
		w.ServerCores = (b.Server.CPU - a.Server.CPU).Seconds() / w.Wall.Seconds()
	}
	for cmd, n := range b.Server.Calls {
		d := n - a.Server.Calls[cmd]
		if cmd == "info" {
			d-- // the INFO that took b
		}
		if d > 0 {
			w.Calls[cmd] = d
			w.TotalCalls += d
		}
	}
	return w
}

// Other returns the cores used by processes other than the client and the
// server: machine - client - server. serverLocal is false when the server
// runs on another machine (its CPU is then not part of this machine's).
func (w Window) Other(clientCores float64, serverLocal bool) float64 {
	o := w.MachineCores - clientCores
	if serverLocal {
		o -= w.ServerCores
	}
	return o
}

// Sum returns the calls of the named commands.
func (w Window) Sum(cmds ...string) int64 {
	var n int64
	for _, c := range cmds {
		n += w.Calls[c]
	}
	return n
}

// TopLevelOnly lists commands that a script cannot call, so that their calls
// were all sent by clients: used to estimate the client's commands when its
// adapter cannot count them.
var TopLevelOnly = []string{
	"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro", "script|load", "script|exists",
	"subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe",
	"ping", "hello", "client|setname", "client|setinfo", "client|tracking", "select", "auth", "multi", "exec",
	"wait", "readonly",
}

package main

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/report"
	"github.com/locksmith-go/locksmith/bench/internal/sample"
	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

// The ceiling: what the server sustains with each library's own lock
// commands when nothing waits. ceilingClients connections each take and
// release a key of their own in a loop, Pipeline pairs per write, so that
// every release finds the lock held once by that connection and releases it
// (del and, for rlock, publish), as an uncontended pair does; the generator
// is this process, encoding every batch once and only counting replies, so
// its CPU, which competes with the server's on a small machine, is as low as
// a client's can be. A run whose machine was disturbed by other processes is
// retried (-reruns).
const (
	ceilingClients = 16
	ceilingWarmup  = 200 * time.Millisecond
	ceilingLeaseMs = "30000"
)

var ceilingPipelines = []int{1, 16}

// ceilingKind is one library's pair of commands, as the library sends them.
type ceilingKind struct {
	name     string
	commands string
	scripts  []string // sources to load (SCRIPT LOAD) before the run
	acquire  func(key, value string) []string
	release  func(key, value string) []string
}

// The peers' scripts, verbatim from the versions bench/go.mod pins
// (bsm/redislock v0.9.4 luaObtain and luaRelease; go-redsync/redsync v4
// deleteScript; rueidis/rueidislock acqms and delkey).
const (
	redsyncDelete = `
	local val = redis.call("GET", KEYS[1])
	if val == ARGV[1] then
		return redis.call("DEL", KEYS[1])
	elseif val == false then
		return -1
	else
		return 0
	end
`
	redislockObtain = `
if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[3]) then return redis.status_reply("OK") end

local offset = tonumber(ARGV[2])
if redis.call("getrange", KEYS[1], 0, offset-1) == string.sub(ARGV[1], 1, offset) then return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[3]) end
`
	redislockRelease   = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
	rueidislockAcquire = `local r = redis.call("SET",KEYS[1],ARGV[1],"NX","PX",ARGV[2]);redis.call("GET",KEYS[1]);return r`
	rueidislockDelete  = `if redis.call("GET",KEYS[1]) == ARGV[1] then return redis.call("DEL",KEYS[1]) end;return 0`
)

func sha(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

func evalsha(src string, keys []string, args ...string) []string {
	cmd := append([]string{"EVALSHA", sha(src), strconv.Itoa(len(keys))}, keys...)
	return append(cmd, args...)
}

// ceilingKinds are the kinds, by report.CeilingKindOf's names.
var ceilingKinds = []ceilingKind{
	{
		name: report.CeilingRlock, commands: "EVALSHA of rlock's lock.acquire and lock.release (release publishes)",
		scripts: []string{workload.AcquireScript.Src, workload.ReleaseScript.Src},
		acquire: func(key, owner string) []string {
			keys, args := workload.AcquireArgs(key, ceilingLeaseMs, owner)
			return evalsha(workload.AcquireScript.Src, keys, args...)
		},
		release: func(key, owner string) []string {
			keys, args := workload.ReleaseArgs(key, ceilingLeaseMs, owner)
			return evalsha(workload.ReleaseScript.Src, keys, args...)
		},
	},
	{
		name: report.CeilingRedsync, commands: "SET NX PX, EVALSHA of redsync's delete script",
		scripts: []string{redsyncDelete},
		acquire: func(key, value string) []string { return []string{"SET", key, value, "PX", ceilingLeaseMs, "NX"} },
		release: func(key, value string) []string { return evalsha(redsyncDelete, []string{key}, value) },
	},
	{
		name: report.CeilingRedislock, commands: "EVALSHA of redislock's obtain and release scripts",
		scripts: []string{redislockObtain, redislockRelease},
		acquire: func(key, value string) []string {
			return evalsha(redislockObtain, []string{key}, value, "22", ceilingLeaseMs)
		},
		release: func(key, value string) []string { return evalsha(redislockRelease, []string{key}, value) },
	},
	{
		name: report.CeilingRueidislock, commands: "EVALSHA of rueidislock's acquire and delete scripts",
		scripts: []string{rueidislockAcquire, rueidislockDelete},
		acquire: func(key, value string) []string {
			return evalsha(rueidislockAcquire, []string{"rueidislock:0:" + key}, value, ceilingLeaseMs)
		},
		release: func(key, value string) []string {
			return evalsha(rueidislockDelete, []string{"rueidislock:0:" + key}, value)
		},
	},
}

// kindsFor returns the kinds of the libraries that run, with them.
func kindsFor(libs []string) []report.CeilingKind {
	var out []report.CeilingKind
	for _, k := range ceilingKinds {
		var users []string
		for _, l := range libs {
			if report.CeilingKindOf(l) == k.name {
				users = append(users, l)
			}
		}
		if len(users) > 0 {
			out = append(out, report.CeilingKind{Name: k.name, Commands: k.commands, Libraries: users})
		}
	}
	return out
}

func kindNamed(name string) ceilingKind {
	for _, k := range ceilingKinds {
		if k.name == name {
			return k
		}
	}
	panic("bench: unknown ceiling kind " + name) // the kinds come from kindsFor
}

// measureCeiling runs every kind of libs at every depth of ceilingPipelines.
func (r *runner) measureCeiling(ctx context.Context, libs []string) report.Ceiling {
	c := report.Ceiling{Clients: ceilingClients, Scripts: scriptsLabel, Kinds: kindsFor(libs)}
	for _, k := range c.Kinds {
		kind := kindNamed(k.Name)
		for _, src := range kind.scripts {
			got, err := r.admin.String(ctx, "SCRIPT", "LOAD", src)
			if err != nil || got != sha(src) {
				c.Error = fmt.Sprintf("SCRIPT LOAD of the %s ceiling's script: %q, %v", k.Name, got, err)
				return c
			}
		}
		for _, p := range ceilingPipelines {
			r.ui.step(fmt.Sprintf("ceiling %s P%d", k.Name, p))
			var best *report.CeilingRun
			attempts := 0
			for attempts <= r.o.reruns && ctx.Err() == nil {
				attempts++
				r.waitQuiet(ctx)
				run, err := r.ceilingRun(ctx, kind, p, r.o.ceilingDur)
				r.flush(context.WithoutCancel(ctx))
				if err != nil {
					c.Error = fmt.Sprintf("ceiling %s P%d: %v", k.Name, p, err)
					return c
				}
				if best == nil || run.OtherCPU < best.OtherCPU {
					best = &run
				}
				if run.OtherCPU <= r.o.otherMax {
					break
				}
				if attempts <= r.o.reruns {
					r.ui.logf("ceiling %s P%d disturbed (other CPU %.2f cores), rerunning", k.Name, p, run.OtherCPU)
				}
			}
			if best == nil {
				c.Error = "interrupted"
				return c
			}
			best.Attempts, best.Disturbed = attempts, best.OtherCPU > r.o.otherMax
			c.Runs = append(c.Runs, *best)
			r.ui.finished(fmt.Sprintf("ceiling %s P%d: %.0f pairs/s", k.Name, p, best.PerSec))
		}
	}
	c.Finish()
	return c
}

// ceilingSteps is the number of progress steps measureCeiling reports.
func ceilingSteps(libs []string) int { return len(kindsFor(libs)) * len(ceilingPipelines) }

// ceilingRun measures one kind at one depth for d after a short warm-up,
// sampling the server and the machine at the window's edges.
func (r *runner) ceilingRun(ctx context.Context, kind ceilingKind, pipeline int, d time.Duration) (report.CeilingRun, error) {
	run := report.CeilingRun{Kind: kind.name, Pipeline: pipeline}
	conns := make([]net.Conn, 0, ceilingClients)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var dialer net.Dialer
	for i := 0; i < ceilingClients; i++ {
		c, err := dialer.DialContext(ctx, "tcp", r.addr)
		if err != nil {
			return run, err
		}
		conns = append(conns, c)
	}
	var measuring, stop atomic.Bool
	var pairs, unexpected atomic.Int64
	lat := workload.NewLatencies(ceilingClients)
	errs := make(chan error, ceilingClients)
	var wg sync.WaitGroup
	for i, c := range conns {
		key := fmt.Sprintf("bench-ceiling:%s:%d", kind.name, i)
		value := fmt.Sprintf("bench-ceiling-owner-%04d-0123456789", i)
		batch := encodeBatch(kind, key, value, pipeline)
		wg.Add(1)
		// Owned by ceilingRun: ends when stop is set (or its connection
		// fails); waited for below.
		go func(i int, c net.Conn) {
			defer wg.Done()
			br := bufio.NewReaderSize(c, 64<<10)
			for !stop.Load() {
				t0 := time.Now()
				if _, err := c.Write(batch); err != nil {
					errs <- err
					return
				}
				var bad int64
				for j := 0; j < pipeline; j++ {
					for _, acquire := range []bool{true, false} {
						ok, err := readExpected(br, acquire)
						if err != nil {
							errs <- err
							return
						}
						if !ok {
							bad++
						}
					}
				}
				if measuring.Load() {
					lat.Record(i, time.Since(t0))
					pairs.Add(int64(pipeline))
					unexpected.Add(bad)
				}
			}
		}(i, c)
	}
	finish := func() {
		stop.Store(true)
		wg.Wait()
	}
	if !sleepFor(ctx, ceilingWarmup) {
		finish()
		return run, ctx.Err()
	}
	a, aerr := r.sample(ctx)
	cpu0 := workload.ProcessCPU()
	measuring.Store(true)
	sleepFor(ctx, d)
	measuring.Store(false)
	cpu1 := workload.ProcessCPU()
	b, berr := r.sample(ctx)
	finish()
	select {
	case err := <-errs:
		return run, err
	default:
	}
	if aerr == nil && berr == nil {
		w := sample.Between(a, b, r.ncpu)
		tool := workload.Cores(cpu1-cpu0, w.Wall)
		run.ServerCPU, run.ToolCPU = w.ServerCores, tool
		run.OtherCPU = w.Other(tool, r.serverLocal)
		run.PerSec = float64(pairs.Load()) / w.Wall.Seconds()
	}
	run.Pairs, run.Unexpected = pairs.Load(), unexpected.Load()
	var rec workload.Record
	lat.Summarize(&rec)
	run.P50Ms, run.P99Ms, run.MaxMs = rec.P50us/1e3, rec.P99us/1e3, rec.MaxUs/1e3
	return run, nil
}

func sleepFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// encodeBatch encodes pipeline (acquire, release) pairs on key as RESP.
func encodeBatch(kind ceilingKind, key, value string, pipeline int) []byte {
	var one []byte
	for _, cmd := range [][]string{kind.acquire(key, value), kind.release(key, value)} {
		one = append(one, '*')
		one = strconv.AppendInt(one, int64(len(cmd)), 10)
		one = append(one, '\r', '\n')
		for _, a := range cmd {
			one = append(one, '$')
			one = strconv.AppendInt(one, int64(len(a)), 10)
			one = append(one, '\r', '\n')
			one = append(one, a...)
			one = append(one, '\r', '\n')
		}
	}
	return []byte(strings.Repeat(string(one), pipeline))
}

// readExpected reads one reply and reports whether it is what a pair's
// command gets when nothing else holds the key: a grant to an acquire (+OK,
// or rlock's hold count 1), 1 (released) to a release.
func readExpected(br *bufio.Reader, acquire bool) (bool, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return false, err
	}
	if len(line) < 3 {
		return false, fmt.Errorf("malformed reply %q", line)
	}
	body := string(line[1 : len(line)-2])
	switch line[0] {
	case '+':
		return acquire && body == "OK", nil
	case ':':
		return !acquire && body == "1", nil
	case '-':
		return false, fmt.Errorf("server error: %s", body)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return false, fmt.Errorf("malformed bulk length %q", body)
		}
		if n < 0 {
			return false, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return false, err
		}
		return acquire && string(b[:n]) == "1", nil
	}
	return false, fmt.Errorf("unexpected reply type %q", line[0])
}

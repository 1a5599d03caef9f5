// Command peers runs benchmark cases for the other Go lock libraries, so that
// the locksmith library's module never depends on them (they are in the bench
// module's go.mod) and the bench binary never links them: the benchmark
// orchestrator (go run ./bench) builds it into a temporary directory and
// starts it once per case.
//
// Usage:
//
//	peers case -workload w1 -lib redsync -g 64 -addr 127.0.0.1:6379 [-sync]
//	peers list
//
// "case" runs one case and prints JSON lines (see workload.CaseMain). The
// libraries and their variants:
//
//	redsync              go-redsync/redsync v4 (default 32 tries, 50-250 ms random retry delay)
//	redsync:1ms          redsync with a fixed 1 ms retry delay
//	redislock            bsm/redislock, exponential back-off from 16 ms capped at 512 ms, with jitter
//	redislock:1ms        bsm/redislock with LinearBackoff(1 ms)
//	rueidislock          rueidislock, KeyMajority 1, NoLoopTracking (its README's settings for one Redis >= 7.0.5), TryNextAfter 1 s
//	rueidislock:loop     rueidislock without NoLoopTracking
//	rueidislock:20ms     rueidislock with its default TryNextAfter (20 ms)
//	rueidis              raw rueidis: rlock's own lock scripts by EVALSHA, waiting on the unlock channel
//	rueidis:flush        raw rueidis with MaxFlushDelay 20 µs
//	goredis              raw go-redis: the same on go-redis
//
// Every go-redis client has PoolSize max(G, 20) and every rueidis client
// PipelineMultiplex 1 (2 connections), whatever GOMAXPROCS; "case" records
// each adapter's configuration (workload.Describer) for the report.
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

// factories are the peer libraries this binary can run, by base name.
var factories = map[string]workload.Factory{
	"redsync":     newRedsync,
	"redislock":   newRedislock,
	"rueidislock": newRueidislock,
	"rueidis":     newRawRueidis,
	"goredis":     newRawGoredis,
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "case":
		os.Exit(workload.CaseMain(os.Args[2:], factories, os.Stdin, os.Stdout, os.Stderr))
	case "list":
		for name := range factories {
			fmt.Println(name)
		}
	default:
		usage()
	}
}

// version returns the version of module path linked into this binary.
func version(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: peers case [flags] | peers list")
	os.Exit(2)
}

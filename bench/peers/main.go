// Command peers runs benchmark cases for the other Go lock libraries, so that
// the locksmith module never depends on them: this directory is its own Go
// module (see go.mod), built by the benchmark orchestrator (go run ./bench)
// into a temporary directory and started once per case.
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
//	redislock            bsm/redislock with ExponentialBackoff(16 ms, 512 ms)
//	redislock:1ms        bsm/redislock with LinearBackoff(1 ms)
//	rueidislock          rueidislock, KeyMajority 1, NoLoopTracking (its README's settings for one Redis >= 7.0.5)
//	rueidislock:loop     rueidislock without NoLoopTracking
//	rueidislock:1s       rueidislock with TryNextAfter 1 s
//	rueidis              raw rueidis: rlock's own lock scripts by EVALSHA, waiting on the unlock channel
//	goredis              raw go-redis: the same on go-redis
package main

import (
	"fmt"
	"os"

	"github.com/locksmith-go/locksmith/bench/workload"
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

func usage() {
	fmt.Fprintln(os.Stderr, "usage: peers case [flags] | peers list")
	os.Exit(2)
}

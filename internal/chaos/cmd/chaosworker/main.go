// Command chaosworker is the worker process of the chaos checker (package chaos): it acquires fenced and plain
// locks from rlock in a loop, holds them while watching the held context, releases them, and logs every step for
// the checker. The chaos test and the soak runner start it themselves (they re-execute their own binary); this
// command exists to run one by hand:
//
//	chaosworker -proc 0 -addr 127.0.0.1:6379 -locks a,b,c -log /tmp/w0.log
//
// It stops cleanly on SIGTERM or SIGINT.
package main

import (
	"os"

	"github.com/locksmith-go/locksmith/internal/chaos"
)

func main() { os.Exit(chaos.WorkerMain(os.Args[1:], os.Stdout, os.Stderr)) }

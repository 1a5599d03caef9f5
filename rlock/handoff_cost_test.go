package rlock

import (
	"context"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// The server cost of the in-process hand-off: a release that names the releasing client's next waiter, which
// gets the lock in the same step when nobody else is queued (64 goroutines of one process on one lock do nothing
// else). Two owners pass the lock back and forth on one raw connection, one command at a time, every command
// encoded beforehand; the floor is a script that only moves the hold (HGET, DEL, HSET, PEXPIRE). It reports the
// server time per hand-off (INFO commandstats). Run:
//
//	go test -run '^$' -bench BenchmarkLocalHandOffServerCost -benchtime 20000x -count 3 ./rlock

// floorHandOffSrc moves a last hold from ARGV[1] to ARGV[2] with lease ARGV[3]: the commands a hand-off cannot do
// without. KEYS[1] lock.
const floorHandOffSrc = `if redis.call('hget', KEYS[1], ARGV[1]) ~= '1' then return nil end
redis.call('del', KEYS[1])
redis.call('hset', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[3])
return 1`

func BenchmarkLocalHandOffServerCost(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	loadScripts(b, srv, scripts.LockAcquire.Source, scripts.LockRelease.Source, floorHandOffSrc)
	const name, lease = "bench:handoff", "30000"
	encode := func(args ...string) []byte { return resp.AppendCommand(nil, args...) }
	release := func(from, to string) []byte {
		return encode(plainEval(shaOf(scripts.LockRelease.Source), name, from, "1", lease, to, "g"+lease+":0:",
			"publish")...)
	}
	floor := func(from, to string) []byte {
		return encode("EVALSHA", shaOf(floorHandOffSrc), "1", name, from, to, lease)
	}
	cases := []struct {
		name   string
		ab, ba []byte
	}{
		{"rlock", release(ownerA, ownerB), release(ownerB, ownerA)},
		{"floor", floor(ownerA, ownerB), floor(ownerB, ownerA)},
	}
	acquire := encode(plainEval(shaOf(scripts.LockAcquire.Source), name, lease, ownerA, "", "publish")...)
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			if _, err := srv.Do(ctx, "DEL", name); err != nil {
				b.Fatal(err)
			}
			p := dialPipe(b, srv.Addr())
			p.w.Write(acquire)
			p.recv(b, 1)
			// One round first, checked: each release hands the lock to the other owner.
			steps := [2][]byte{tc.ab, tc.ba}
			for i, step := range steps {
				p.w.Write(step)
				p.recv(b, 1)
				holder := []string{ownerB, ownerA}[i]
				if n, err := srv.DoInt(ctx, "HEXISTS", name, holder); err != nil || n != 1 {
					b.Fatalf("after hand-off %d: HEXISTS %s %s = %d, %v; want 1", i+1, name, holder, n, err)
				}
			}
			resetStats(b, srv)
			b.ResetTimer()
			for i := range b.N {
				p.w.Write(steps[i%2])
				p.recv(b, 1)
			}
			b.StopTimer()
			st := scriptStats(b, srv, b.N)
			b.ReportMetric(statField(b, st["cmdstat_evalsha"], "usec_per_call"), "server-µs/handoff")
		})
	}
}

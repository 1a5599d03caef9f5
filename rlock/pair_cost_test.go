package rlock

import (
	"context"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// The server cost of an uncontended lock+unlock pair issued one command at a time, as a sequential caller issues
// it: rlock's scripts against Redisson's own (the layout rlock shares) and against a single-key lock in the manner
// of bsm/redislock (SET NX PX; GET and DEL), on one raw connection with every command encoded beforehand, so that
// the figures are the server's and the socket's, not a client's. It reports the server time per pair (INFO
// commandstats) and ns/op, the pair's round trips included. Run:
//
//	go test -run '^$' -bench BenchmarkUncontendedPairServerCost -benchtime 20000x -count 5 ./rlock

// redissonAcquireSrc is Redisson's acquire as it documents it (create or re-enter, else the PTTL), written for
// this comparison. KEYS[1] lock; ARGV[1] lease ms, ARGV[2] owner.
const redissonAcquireSrc = `if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`

// The single-key lock's pair, as bsm/redislock's obtain (its first line, the path an uncontended obtain takes) and
// release. KEYS[1] lock; ARGV[1] token, ARGV[2] lease ms.
const (
	setNXAcquireSrc = `if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0`
	getDelReleaseSrc = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0`
)

func BenchmarkUncontendedPairServerCost(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	loadScripts(b, srv, scripts.LockAcquire.Source, scripts.LockRelease.Source, redissonAcquireSrc, plainReleaseSrc,
		setNXAcquireSrc, getDelReleaseSrc)
	const name, lease, token = "bench:pair", "30000", "0123456789abcdef0123456789abcdef"
	encode := func(args ...string) []byte { return resp.AppendCommand(nil, args...) }
	cases := []struct {
		name             string
		acquire, release []byte
	}{
		{"rlock",
			encode(plainEval(shaOf(scripts.LockAcquire.Source), name, lease, ownerA, "", "publish")...),
			encode(plainEval(shaOf(scripts.LockRelease.Source), name, ownerA, "1", lease, "publish")...)},
		{"redisson",
			encode("EVALSHA", shaOf(redissonAcquireSrc), "1", name, lease, ownerA),
			encode("EVALSHA", shaOf(plainReleaseSrc), "2", name, channelName(name), scripts.UnlockMessage, lease, ownerA)},
		{"setnx",
			encode("EVALSHA", shaOf(setNXAcquireSrc), "1", name, token, lease),
			encode("EVALSHA", shaOf(getDelReleaseSrc), "1", name, token)},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			p := dialPipe(b, srv.Addr())
			// One pair first, checked: the acquire takes the lock and the release frees it, so that the loop
			// below times grants and releases, not refusals.
			for i, want := range []int64{1, 0} {
				p.w.Write([][]byte{tc.acquire, tc.release}[i])
				p.recv(b, 1)
				if n, err := srv.DoInt(ctx, "EXISTS", name); err != nil || n != want {
					b.Fatalf("after the %s: EXISTS %s = %d, %v; want %d", []string{"acquire", "release"}[i], name, n, err, want)
				}
			}
			resetStats(b, srv)
			b.ResetTimer()
			for range b.N {
				p.w.Write(tc.acquire)
				p.recv(b, 1)
				p.w.Write(tc.release)
				p.recv(b, 1)
			}
			b.StopTimer()
			st := scriptStats(b, srv, 2*b.N)
			b.ReportMetric(2*statField(b, st["cmdstat_evalsha"], "usec_per_call"), "server-µs/pair")
		})
	}
}

package rlock

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// The server cost of a hand-over through the cross-process queue, measured where it is paid (INFO commandstats):
// the holder's release grants the lock to the head of the queue, a waiter of another client, and publishes on that
// client's grant channel; then the releaser queues again at the tail — what each process of P processes looping
// lock → unlock on one key does, P-1 of them waiting. It is the server's share of every cross-process grant, next to
// the uncontended pair's (BenchmarkUncontendedPairServerCost). It reports the scripts' server time per hand-over, the
// commands they run and those commands' own time. Run:
//
//	go test -run '^$' -bench BenchmarkHandOverServerCost -benchtime 20000x -count 5 ./rlock
func BenchmarkHandOverServerCost(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	loadScripts(b, srv, scripts.LockAcquire.Source, scripts.LockRelease.Source)
	acquireSHA, releaseSHA := shaOf(scripts.LockAcquire.Source), shaOf(scripts.LockRelease.Source)
	// A first attempt of a waiter that may be granted the lock by someone else's script, with a 3 s lease; the
	// nonce is the owner's id (an owner made for the call, as a Lock call's is). claimSpec is the same waiter's
	// attempt once queued.
	const lease, spec, claimSpec = "3000", "g3000:0:", "g3000:1:"
	for _, waiters := range []int{1, 63} {
		b.Run("waiters="+strconv.Itoa(waiters), func(b *testing.B) {
			name := fmt.Sprintf("bench:handover:%d", waiters)
			keys := plainKeysOf(name)
			attempt := func(owner, spec string) []string {
				return plainEval(acquireSHA, name, lease, owner, spec, "publish")
			}
			release := func(owner string) []string { return plainEval(releaseSHA, name, owner, "1", lease, "publish") }
			owners := make([]string, waiters+1) // one client each: every grant goes to another client
			for i := range owners {
				owners[i] = fmt.Sprintf("%08x-0000-4000-8000-%012x:1", i+1, i+1)
			}
			// The function runs more than once per sub-benchmark (b.N = 1 first): start from a free lock.
			if _, err := srv.Do(ctx, append([]string{"DEL"}, keys[:3]...)...); err != nil {
				b.Fatal(err)
			}
			p := dialPipe(b, srv.Addr())
			// The first owner takes the lock, the others queue behind it in their order.
			for _, o := range owners {
				p.send(attempt(o, spec)...)
			}
			got := p.recvInto(b, len(owners), []resp.Value{})
			if got[0].Type != resp.BulkString || got[0].Str != "1" {
				b.Fatalf("the first acquire answered %+v, want the hold count 1", got[0])
			}
			for i, v := range got[1:] {
				if v.Type != resp.Integer || (i > 0 && v.Int != scripts.QueuedNotHead) {
					b.Fatalf("waiter %d's acquire answered %+v, want it queued", i+1, v)
				}
			}
			resetStats(b, srv)
			gaps := 0 // runs ended by a gap: each cost one more script
			b.ResetTimer()
			for i := range b.N {
				o := owners[i%len(owners)]
				p.send(release(o)...)
				p.send(attempt(o, spec)...)
				got = p.recvInto(b, 2, got[:0])
				// The releaser is queued again: behind the others, or as the head alone (the lock's PTTL, or the
				// time left of a gap).
				if got[1].Type != resp.Integer || (waiters > 1 && got[1].Int != scripts.QueuedNotHead) ||
					(got[1].Int <= 0 && got[1].Int != scripts.QueuedNotHead) {
					b.Fatalf("hand-over %d: the releaser's new attempt answered %+v, want it queued", i, got[1])
				}
				// 2: granted to a waiter of another client.
				if got[0].Type == resp.Integer && got[0].Int == 2 {
					continue
				}
				// 1: hand-overs kept the lock taken for scripts.RunBound, and the release left it free for
				// scripts.RunGap to clients that do not queue, telling the head to attempt. The head takes it once
				// the gap has passed on the server's clock, as its client would; the wait is not timed.
				if got[0].Type != resp.Integer || got[0].Int != 1 {
					b.Fatalf("hand-over %d: the release answered %+v, want 2 (or 1 at the end of a run)", i, got[0])
				}
				b.StopTimer()
				time.Sleep(scripts.RunGap + time.Millisecond)
				p.send(attempt(owners[(i+1)%len(owners)], claimSpec)...)
				got = p.recvInto(b, 1, got[:0])
				if got[0].Type != resp.BulkString || got[0].Str != "1" {
					b.Fatalf("hand-over %d: the head's attempt after the gap answered %+v, want the hold count 1", i,
						got[0])
				}
				gaps++
				b.StartTimer()
			}
			b.StopTimer()
			st := scriptStats(b, srv, 2*b.N+gaps)
			// The commands the scripts run, and their own time: the rest of the scripts' time is the Lua that
			// decides what to run, and the crossing of redis.call.
			var inner, innerUsec float64
			for name, line := range st {
				if strings.HasPrefix(name, "cmdstat_") && name != "cmdstat_evalsha" && name != "cmdstat_info" &&
					name != "cmdstat_config" {
					inner += statField(b, line, "calls")
					innerUsec += statField(b, line, "usec")
				}
			}
			b.ReportMetric(statField(b, st["cmdstat_evalsha"], "usec")/float64(b.N), "server-µs/handover")
			b.ReportMetric(innerUsec/float64(b.N), "commands-µs/handover")
			b.ReportMetric(inner/float64(b.N), "commands/handover")
		})
	}
}

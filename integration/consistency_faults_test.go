package integration

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/faultproxy"
)

// The consistency test's faults, injected at random points into one client's connections at a time: each makes
// the outcome of the commands in flight unknown to their client, or cuts its subscriptions.
const (
	// faultDropAfterWrite holds the replies back briefly (the commands written meanwhile run on the server), then
	// drops the client's connections: those commands fail with conn.ErrConnLost.
	faultDropAfterWrite = "drop-after-write"
	// faultCutReply lets a few bytes of replies through, then closes the connections mid-reply.
	faultCutReply = "cut-reply"
	// faultSlowReplies delays replies past the response timeout for a while: the client resets its connections
	// and fails what was in flight with conn.ErrTimeout.
	faultSlowReplies = "slow-replies"
	// faultKillPubSub kills the client's pub/sub connection on the server (CLIENT KILL ID).
	faultKillPubSub = "kill-pubsub"
)

var faultKinds = []string{faultDropAfterWrite, faultCutReply, faultSlowReplies, faultKillPubSub}

// faulter injects faults into the clients' proxies until stopped, and counts them by kind. Safe for concurrent use.
type faulter struct {
	proxies         []*faultproxy.Proxy
	names           []string // the clients' connection names (conn.Config.ClientName), for the pub/sub kill
	admin           *conn.Client
	responseTimeout time.Duration

	mu     sync.Mutex
	counts map[string]int
}

// run injects faults into each client's connections, a fault every 20-200 ms per client, until ctx ends; then it
// removes every fault.
func (f *faulter) run(ctx context.Context, seed uint64) {
	var wg sync.WaitGroup
	for i, px := range f.proxies {
		rng := rand.New(rand.NewPCG(seed, uint64(i)+1))
		wg.Go(func() {
			defer px.Restore()
			for sleepCtx(ctx, time.Duration(20+rng.IntN(180))*time.Millisecond) {
				kind := faultKinds[rng.IntN(len(faultKinds))]
				if !f.inject(ctx, rng, i, kind) {
					return
				}
				f.mu.Lock()
				f.counts[kind]++
				f.mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// inject applies one fault to client i and removes it again; false when ctx ended meanwhile.
func (f *faulter) inject(ctx context.Context, rng *rand.Rand, i int, kind string) bool {
	px := f.proxies[i]
	switch kind {
	case faultDropAfterWrite:
		px.Stall(faultproxy.Downstream)
		ok := sleepCtx(ctx, time.Duration(5+rng.IntN(45))*time.Millisecond)
		px.DropAll()
		px.Restore()
		return ok
	case faultCutReply:
		px.CutAfter(faultproxy.Downstream, int64(1+rng.IntN(64)))
		ok := sleepCtx(ctx, time.Duration(10+rng.IntN(40))*time.Millisecond)
		px.Restore()
		return ok
	case faultSlowReplies:
		px.SetLatency(faultproxy.Downstream, f.responseTimeout+time.Duration(50+rng.IntN(150))*time.Millisecond)
		ok := sleepCtx(ctx, f.responseTimeout+time.Duration(rng.IntN(300))*time.Millisecond)
		px.SetLatency(faultproxy.Downstream, 0)
		return ok
	case faultKillPubSub:
		f.killPubSub(ctx, f.names[i])
	}
	return ctx.Err() == nil
}

// killPubSub kills the pub/sub connections of the client whose connections are called name.
func (f *faulter) killPubSub(ctx context.Context, name string) {
	v, err := f.admin.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Get(ctx)
	if err != nil {
		return
	}
	for _, line := range strings.Split(v.Str, "\n") {
		var id string
		match := false
		for _, kv := range strings.Fields(line) {
			switch {
			case strings.HasPrefix(kv, "id="):
				id = kv[3:]
			case kv == "name="+name:
				match = true
			}
		}
		if match && id != "" {
			_, _ = f.admin.Do(ctx, "CLIENT", "KILL", "ID", id).Get(ctx) // it may have gone already
		}
	}
}

// total returns the faults injected, in all and by kind.
func (f *faulter) total() (int, map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	out := map[string]int{}
	for k, v := range f.counts {
		n += v
		out[k] = v
	}
	return n, out
}

// sleepCtx sleeps for d (a fault's duration or the pause between faults: the test's schedule, not a wait for an
// event), and reports false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

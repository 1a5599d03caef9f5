package integration

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// Helpers shared by the integration tests.

// newLockClient connects an rlock.Client to srv (any deployment: see lockConfig) and closes it when the test
// ends. watchdog 0 takes the default.
func newLockClient(t testing.TB, srv server, watchdog time.Duration) *rlock.Client {
	t.Helper()
	c, err := rlock.NewClient(lockConfig(srv, rlock.Config{WatchdogTimeout: watchdog}))
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ctxT returns a context bounded by d, cancelled when the test ends.
func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func mustLock(t testing.TB, l *rlock.Lock, ctx context.Context) context.Context {
	t.Helper()
	held, err := l.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock(%s): %v", l.Name(), err)
	}
	return held
}

func mustUnlock(t testing.TB, l *rlock.Lock, held context.Context) {
	t.Helper()
	if err := l.Unlock(held); err != nil {
		t.Fatalf("Unlock(%s): %v", l.Name(), err)
	}
}

// mustOwner returns the owner a held context carries.
func mustOwner(t testing.TB, held context.Context) string {
	t.Helper()
	o, ok := rlock.OwnerOf(held)
	if !ok {
		t.Fatal("no owner in the held context")
	}
	return o
}

func hgetall(t testing.TB, srv server, key string) map[string]string {
	t.Helper()
	m, err := srv.DoMap(context.Background(), "HGETALL", key)
	if err != nil {
		t.Fatalf("HGETALL %s: %v", key, err)
	}
	return m
}

// doneCause waits for ctx to be cancelled, at most d, and returns its cause.
func doneCause(t testing.TB, ctx context.Context, d time.Duration) error {
	t.Helper()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(d):
		t.Fatalf("context not cancelled within %v", d)
		return nil
	}
}

// eventually waits for cond, checking every few milliseconds, and fails the test after d. It is for server-side
// state that sends no event a test could await (a client subscribed, a key expired) and for state that settles
// through asynchronous work no event reports.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	eventuallyShowing(t, d, what, cond, func() string { return "" })
}

// eventuallyShowing is eventually with what was seen, which the failure shows (seen is called after cond).
func eventuallyShowing(t testing.TB, d time.Duration, what string, cond func() bool, seen func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			if s := seen(); s != "" {
				what += " (seen: " + s + ")"
			}
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// subscribed waits until some client is subscribed to channel: a waiter is then waiting.
func subscribed(t testing.TB, srv server, channel string) {
	t.Helper()
	eventually(t, 5*time.Second, "a subscription to "+channel, func() bool {
		r, err := srv.Do(context.Background(), "PUBSUB", "NUMSUB", channel)
		return err == nil && len(r.Array) == 2 && r.Array[1].Int > 0
	})
}

// idle reports whether a client's Stats show nothing going on: no hold, no waiter, no subscription. (Its counters
// since the client was created, such as the orphaned grants it released, may be anything.)
func idle(s rlock.Stats) bool { return s.Held == 0 && s.Waiters == 0 && s.Queues == 0 }

// observerFunc adapts functions to rlock.Observer.
type observerFunc struct {
	rlock.NopObserver
	renewal  func(rlock.RenewalEvent)
	acquired func(rlock.AcquiredEvent)
	lost     func(rlock.LostEvent)
}

func (o observerFunc) RenewalBatch(e rlock.RenewalEvent) {
	if o.renewal != nil {
		o.renewal(e)
	}
}

func (o observerFunc) Acquired(e rlock.AcquiredEvent) {
	if o.acquired != nil {
		o.acquired(e)
	}
}

func (o observerFunc) Lost(e rlock.LostEvent) {
	if o.lost != nil {
		o.lost(e)
	}
}

// inParallel runs fn(0) .. fn(n-1) on n goroutines, waits for them, and fails the test with the errors they
// returned.
func inParallel(t testing.TB, n int, fn func(i int) error) {
	t.Helper()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { // owned by the test; waited for by wg
			defer wg.Done()
			if err := fn(i); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// commandCounts counts the server's commands by name (every master's, on a deployment), leaving out the ones a
// test, an idle connection, a replica or a topology refresh sends (INFO, PING, connection set-up, ROLE, CLUSTER
// SHARDS, COMMAND INFO, PSYNC and REPLCONF, the test's PUBSUB and CONFIG, and a Sentinel deployment's PUBLISH):
// what is left is what the client sent.
func commandCounts(t testing.TB, srv server) map[string]int64 {
	t.Helper()
	counts := make(map[string]int64)
	if d, ok := srv.(*deployment); ok {
		ms, err := d.masters(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			for name, n := range commandCounts(t, m) {
				counts[name] += n
			}
		}
		if d.rs != nil {
			// Every Sentinel publishes its hello message on the master every 2 s; PUBLISH is the Sentinel's here.
			delete(counts, "publish")
		}
		return counts
	}
	info, err := srv.Info(context.Background(), "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range info {
		name := strings.TrimPrefix(k, "cmdstat_")
		switch {
		case name == k, name == "info", name == "ping", name == "client|setname", name == "hello", name == "select",
			name == "role", name == "readonly", name == "psync", name == "sync", name == "replconf",
			strings.HasPrefix(name, "cluster|"), strings.HasPrefix(name, "command|"), strings.HasPrefix(name, "pubsub|"),
			strings.HasPrefix(name, "config|"):
			continue
		}
		calls := strings.TrimPrefix(strings.SplitN(v, ",", 2)[0], "calls=")
		n, _ := strconv.ParseInt(calls, 10, 64)
		counts[name] = n
	}
	return counts
}

// commandsSince names the commands counted in after and not in before ("evalsha×2 get×1"), for a failure message.
func commandsSince(before, after map[string]int64) string {
	var parts []string
	for name, n := range after {
		if d := n - before[name]; d != 0 {
			parts = append(parts, fmt.Sprintf("%s×%d", name, d))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

package rlockprom

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/faultproxy"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestMain fails the run if a goroutine outlives the tests, and points the example at a throwaway redis-server
// through LOCKSMITH_REDIS_ADDR, as a service's configuration would, so that its output is checked on every run.
func TestMain(m *testing.M) { redistest.ServeExamples(m) }

// scrape fetches /metrics and returns each sample line's value by its name and labels, as exposed.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	samples := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	return samples
}

// signalling passes events to the Collector and then tells the test, which awaits them instead of polling.
type signalling struct {
	*Collector
	renewed, lost chan struct{}
}

func (s signalling) RenewalBatch(e rlock.RenewalEvent) {
	s.Collector.RenewalBatch(e)
	if e.Renewed > 0 {
		select {
		case s.renewed <- struct{}{}:
		default:
		}
	}
}

func (s signalling) Lost(e rlock.LostEvent) {
	s.Collector.Lost(e)
	s.lost <- struct{}{}
}

// After real lock traffic against a real redis-server, /metrics reports each kind of event.
func TestMetricsAfterLockTraffic(t *testing.T) {
	srv := redistest.Start(t)
	m := New(Options{ConstLabels: prometheus.Labels{"service": "test"}})
	obs := signalling{Collector: m, renewed: make(chan struct{}, 1), lost: make(chan struct{}, 1)}
	c, err := rlock.NewClient(rlock.Config{Observer: obs, WatchdogTimeout: 300 * time.Millisecond,
		Conn: conn.Config{Addr: srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m.Watch(c)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	web := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer web.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	l := c.Lock("orders:1")
	held, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryLock(ctx, 20*time.Millisecond, 0); !errors.Is(err, rlock.ErrNotAcquired) { // another owner
		t.Fatalf("TryLock = %v", err)
	}
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if _, err := l.Lock(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a cancelled context = %v", err)
	}
	select { // renewed at least once while held
	case <-obs.renewed:
	case <-ctx.Done():
		t.Fatal("no renewal while the lock was held")
	}
	samples := scrape(t, web.URL)
	if samples[`locksmith_renewals_total{result="renewed",service="test"}`] < 1 {
		t.Error("the renewal is not counted")
	}
	if samples[`locksmith_locks_held{service="test"}`] != 1 {
		t.Errorf("locks_held = %v, want 1", samples[`locksmith_locks_held{service="test"}`])
	}
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	// A lock lost: deleted behind its holder's back, found gone by the next renewal.
	_, err = c.Lock("orders:2").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "DEL", "orders:2"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-obs.lost:
	case <-ctx.Done():
		t.Fatal("the deleted lock was not reported lost")
	}

	samples = scrape(t, web.URL)
	for name, want := range map[string]float64{
		`locksmith_acquire_wait_seconds_count{outcome="acquired",service="test"}`: 2,
		`locksmith_acquire_wait_seconds_count{outcome="timeout",service="test"}`:  1,
		`locksmith_acquire_wait_seconds_count{outcome="canceled",service="test"}`: 1,
		`locksmith_hold_seconds_count{service="test"}`:                            1,
		`locksmith_releases_total{result="released",service="test"}`:              1,
		`locksmith_locks_lost_total{cause="lost",service="test"}`:                 1,
		`locksmith_renewals_total{result="gone",service="test"}`:                  1,
		`locksmith_locks_held{service="test"}`:                                    0,
		`locksmith_waiters{service="test"}`:                                       0,
		`locksmith_publishes_refused_total{service="test"}`:                       0,
	} {
		if got, ok := samples[name]; !ok || got != want {
			t.Errorf("%s = %v (exposed: %v), want %v", name, got, ok, want)
		}
	}
	if samples[`locksmith_acquire_wait_seconds_sum{outcome="timeout",service="test"}`] < 0.02 {
		t.Errorf("the timed-out acquire's wait is under its 20 ms wait time")
	}
	if samples[`locksmith_connection_events_total{kind="connected",role="command",service="test"}`] < 1 {
		t.Errorf("no connection event reported: %v", samples)
	}
	if samples[`locksmith_renewal_batch_seconds_count{service="test"}`] < 1 {
		t.Error("no renewal round trip reported")
	}
}

// orphanSignalling passes the Orphan events to the Collector and then to the test.
type orphanSignalling struct {
	*Collector
	orphans chan rlock.OrphanEvent
}

func (s orphanSignalling) Orphan(e rlock.OrphanEvent) {
	s.Collector.Orphan(e)
	s.orphans <- e
}

// Two acquires whose replies a proxy holds up past the response timeout: the server granted both, and no caller
// holds either. The client releases the grant to its own owner once replies flow, and leaves the grant to a
// pinned owner to its lease; the counter reports one of each, as the Client's Stats do.
func TestOrphanedGrantsByOutcome(t *testing.T) {
	srv := redistest.Start(t)
	px := faultproxy.Start(t, srv.Addr())
	m := New(Options{})
	orphans := make(chan rlock.OrphanEvent, 2)
	c, err := rlock.NewClient(rlock.Config{Observer: orphanSignalling{Collector: m, orphans: orphans},
		RetryDelay: 50 * time.Millisecond, Conn: conn.Config{Addr: px.Addr(), ResponseTimeout: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	web := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer web.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	const released, expired = `locksmith_grants_orphaned_total{outcome="released"}`,
		`locksmith_grants_orphaned_total{outcome="expired"}`
	samples := scrape(t, web.URL)
	for _, name := range []string{released, expired} {
		if got, ok := samples[name]; !ok || got != 0 {
			t.Errorf("before any orphan: %s = %v (exposed: %v), want 0", name, got, ok)
		}
	}

	// The script is loaded first: an EVALSHA the server does not know is refused, and grants nothing.
	warm := c.Lock("warm")
	held, err := warm.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Unlock(held); err != nil {
		t.Fatal(err)
	}
	px.Stall(faultproxy.Downstream)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, acq := range []context.Context{ctx, rlock.WithOwner(ctx, "7")} {
		wg.Add(1)
		go func() { // owned by the test; waited for by wg
			defer wg.Done()
			_, errs[i] = c.Lock("orphan:" + strconv.Itoa(i)).Lock(acq)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		var ou *rlock.OutcomeUnknownError
		if !errors.As(err, &ou) || ou.Releasing != (i == 0) {
			t.Fatalf("acquire %d: %v, want an *OutcomeUnknownError, releasing only for the client's own owner", i, err)
		}
	}
	px.Restore()
	seen := map[bool]int{}
	for range 2 {
		select {
		case e := <-orphans:
			seen[e.Released]++
		case <-ctx.Done():
			t.Fatalf("orphan events: %v, want one released and one left to its lease", seen)
		}
	}
	if seen[true] != 1 || seen[false] != 1 {
		t.Fatalf("orphan events by Released: %v, want one of each", seen)
	}

	s := c.Stats()
	samples = scrape(t, web.URL)
	for name, want := range map[string]int64{released: s.OrphansReleased, expired: s.OrphansExpired} {
		if got, ok := samples[name]; !ok || got != 1 || int64(got) != want {
			t.Errorf("%s = %v (exposed: %v), want 1 as in Stats %+v", name, got, ok, s)
		}
	}
}

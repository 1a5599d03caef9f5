package rlockotel

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/faultproxy"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestMain fails the run if a goroutine outlives the tests, and points the example at a throwaway redis-server
// through LOCKSMITH_REDIS_ADDR, as a service's configuration would, so that its output is checked on every run.
func TestMain(m *testing.M) { redistest.ServeExamples(m) }

// attrOf returns the value of key among a span's attributes.
func attrOf(attrs []attribute.KeyValue, key attribute.Key) (attribute.Value, bool) {
	for _, a := range attrs {
		if a.Key == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// After real lock traffic against a real redis-server, the in-memory exporters hold the acquire and unlock spans
// (children of the caller's span, named after the lock) and the metrics.
func TestSpansAndMetricsAfterLockTraffic(t *testing.T) {
	srv := redistest.Start(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	o, err := New(Options{MeterProvider: mp, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	c, err := rlock.NewClient(rlock.Config{Observer: o, Conn: conn.Config{Addr: srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o.Watch(c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	ctx, request := tp.Tracer("test").Start(ctx, "request")
	l := c.Lock("orders:7")
	held, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryLock(ctx, 20*time.Millisecond, 0); !errors.Is(err, rlock.ErrNotAcquired) {
		t.Fatalf("TryLock = %v", err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	if v, ok := gauge(rm, "locksmith.locks.held"); !ok || v != 1 {
		t.Errorf("locksmith.locks.held = %d (%v) while held, want 1", v, ok)
	}
	if err := l.Unlock(held); err != nil {
		t.Fatal(err)
	}
	request.End()

	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans.GetSpans() {
		byName[s.Name] = append(byName[s.Name], s)
	}
	if len(byName["rlock.acquire"]) != 2 || len(byName["rlock.unlock"]) != 1 {
		t.Fatalf("spans: %d acquire, %d unlock; want 2 and 1", len(byName["rlock.acquire"]), len(byName["rlock.unlock"]))
	}
	reqID := request.SpanContext().SpanID()
	outcomes := map[string]bool{}
	for _, s := range append(byName["rlock.acquire"], byName["rlock.unlock"]...) {
		if v, ok := attrOf(s.Attributes, KeyLockName); !ok || v.AsString() != "orders:7" {
			t.Errorf("%s span without the lock's name: %v", s.Name, s.Attributes)
		}
		if s.Parent.SpanID() != reqID {
			t.Errorf("%s span's parent is %v, want the caller's span %v", s.Name, s.Parent.SpanID(), reqID)
		}
		if !s.EndTime.After(s.StartTime) {
			t.Errorf("%s span has no duration: %v to %v", s.Name, s.StartTime, s.EndTime)
		}
		if v, ok := attrOf(s.Attributes, KeyAcquireOutcome); ok {
			outcomes[v.AsString()] = true
			if v.AsString() == "timeout" && s.EndTime.Sub(s.StartTime) < 20*time.Millisecond {
				t.Errorf("the timed-out acquire's span lasts %v, under its wait", s.EndTime.Sub(s.StartTime))
			}
		}
	}
	if !outcomes["acquired"] || !outcomes["timeout"] {
		t.Errorf("acquire outcomes in the spans: %v", outcomes)
	}

	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	counts := histogramCounts(rm, "locksmith.acquire.duration", KeyAcquireOutcome)
	if counts["acquired"] != 1 || counts["timeout"] != 1 {
		t.Errorf("locksmith.acquire.duration counts by outcome = %v, want acquired 1, timeout 1", counts)
	}
	if n := histogramCounts(rm, "locksmith.hold.duration", "")[""]; n != 1 {
		t.Errorf("locksmith.hold.duration count = %d, want 1", n)
	}
	if n := sum(rm, "locksmith.releases", KeyReleaseResult, "released"); n != 1 {
		t.Errorf("locksmith.releases{released} = %d, want 1", n)
	}
	if n := sum(rm, "locksmith.connection.events", KeyEventKind, "connected"); n < 1 {
		t.Errorf("locksmith.connection.events{connected} = %d", n)
	}
	if v, ok := gauge(rm, "locksmith.locks.held"); !ok || v != 0 {
		t.Errorf("locksmith.locks.held = %d (%v) after the unlock, want 0", v, ok)
	}
}

// orphanSignalling passes the Orphan events to the Observer and then to the test.
type orphanSignalling struct {
	*Observer
	orphans chan rlock.OrphanEvent
}

func (s orphanSignalling) Orphan(e rlock.OrphanEvent) {
	s.Observer.Orphan(e)
	s.orphans <- e
}

// Two acquires whose replies a proxy holds up past the response timeout: the server granted both, and no caller
// holds either. The client releases the grant to its own owner once replies flow, and leaves the grant to a
// pinned owner to its lease; the counter records one of each, as the Client's Stats do.
func TestOrphanedGrantsByOutcome(t *testing.T) {
	srv := redistest.Start(t)
	px := faultproxy.Start(t, srv.Addr())
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	o, err := New(Options{MeterProvider: mp, NoSpans: true})
	if err != nil {
		t.Fatal(err)
	}
	orphans := make(chan rlock.OrphanEvent, 2)
	c, err := rlock.NewClient(rlock.Config{Observer: orphanSignalling{Observer: o, orphans: orphans},
		RetryDelay: 50 * time.Millisecond, Conn: conn.Config{Addr: px.Addr(), ResponseTimeout: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	for _, outcome := range []string{"released", "expired"} {
		if n, ok := point(rm, "locksmith.grants.orphaned", KeyOrphanOutcome, outcome); !ok || n != 0 {
			t.Errorf("before any orphan: locksmith.grants.orphaned{%s} = %d (recorded: %v), want 0", outcome, n, ok)
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
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	for outcome, want := range map[string]int64{"released": s.OrphansReleased, "expired": s.OrphansExpired} {
		if n, ok := point(rm, "locksmith.grants.orphaned", KeyOrphanOutcome, outcome); !ok || n != 1 || n != want {
			t.Errorf("locksmith.grants.orphaned{%s} = %d (recorded: %v), want 1 as in Stats %+v", outcome, n, ok, s)
		}
	}
}

// find returns the metric called name.
func find(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

func gauge(rm metricdata.ResourceMetrics, name string) (int64, bool) {
	m, ok := find(rm, name)
	if !ok {
		return 0, false
	}
	g, ok := m.Data.(metricdata.Gauge[int64])
	if !ok || len(g.DataPoints) != 1 {
		return 0, false
	}
	return g.DataPoints[0].Value, true
}

// histogramCounts returns a histogram's counts by the value of key ("" for all of them together).
func histogramCounts(rm metricdata.ResourceMetrics, name string, key attribute.Key) map[string]uint64 {
	out := map[string]uint64{}
	m, ok := find(rm, name)
	if !ok {
		return out
	}
	h, _ := m.Data.(metricdata.Histogram[float64])
	for _, dp := range h.DataPoints {
		v, _ := dp.Attributes.Value(key)
		out[v.AsString()] += dp.Count
	}
	return out
}

// sum returns a counter's value where key has value.
func sum(rm metricdata.ResourceMetrics, name string, key attribute.Key, value string) int64 {
	m, ok := find(rm, name)
	if !ok {
		return 0
	}
	s, _ := m.Data.(metricdata.Sum[int64])
	var n int64
	for _, dp := range s.DataPoints {
		if v, _ := dp.Attributes.Value(key); v.AsString() == value {
			n += dp.Value
		}
	}
	return n
}

// point returns a counter's value where key has value, and whether that data point was recorded at all.
func point(rm metricdata.ResourceMetrics, name string, key attribute.Key, value string) (int64, bool) {
	m, ok := find(rm, name)
	if !ok {
		return 0, false
	}
	s, _ := m.Data.(metricdata.Sum[int64])
	for _, dp := range s.DataPoints {
		if v, _ := dp.Attributes.Value(key); v.AsString() == value {
			return dp.Value, true
		}
	}
	return 0, false
}

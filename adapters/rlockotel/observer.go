// Package rlockotel reports the lock events of package rlock as OpenTelemetry metrics and spans.
//
// An Observer is an rlock.Observer (give it to rlock.Config.Observer). It records metrics through a
// metric.MeterProvider and spans through a trace.TracerProvider (the global ones by default):
//
//	o, err := rlockotel.New(rlockotel.Options{})
//	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: addr}, Observer: o})
//	...
//	o.Watch(c) // the locks held and waiters gauges
//
// Spans. Every acquire of a lock is a span "rlock.acquire", from the call to its end, and every release of a
// lock's last hold a span "rlock.unlock"; both carry the lock's name (rlock.lock.name) and owner
// (rlock.lock.owner). The acquire span is a child of the span in the acquiring context; the unlock span of the
// span in the held context's values, which are the acquiring context's (Unlock takes the held context). A failed
// acquire's span has status Error, except a timeout or a cancelled context, which say so in rlock.acquire.outcome.
// Spans are made from the events after the fact, with their real start and end times: an Observer method runs
// when the call ends, never while it waits.
//
// Metrics (instrument names; durations in seconds):
//
//	locksmith.acquire.duration     histogram, attribute rlock.acquire.outcome: acquired, timeout, canceled, error
//	locksmith.hold.duration        histogram: from a lock's first acquisition to its release
//	locksmith.releases             counter, rlock.release.result: released, not_held, error
//	locksmith.renewals             counter, rlock.renewal.result: renewed, gone
//	locksmith.renewal.duration     histogram: one renewal EVALSHA's round trip
//	locksmith.renewal.failures     counter: renewal EVALSHAs that failed
//	locksmith.locks.lost           counter, rlock.lost.cause: lost, lease_expired
//	locksmith.connection.events    counter, conn.event.kind and conn.role
//	locksmith.pubsub.denied        counter, rlock.pubsub.command: publish, subscribe
//	locksmith.locks.held           gauge: locks held through the watched Clients
//	locksmith.waiters              gauge: calls of the watched Clients waiting
//	locksmith.publishes.refused    counter: wake-up messages the server refused (see docs/acl.md)
//	locksmith.grants.orphaned      counter, rlock.orphan.outcome: released, expired — grants no caller held (an
//	                               acquire whose outcome was unknown, or one abandoned while granted), released
//	                               by the client or left to their lease, as rlock.Stats' OrphansReleased and
//	                               OrphansExpired count them; both are recorded from zero
//
// Lock names are span attributes, never metric attributes: a service may use millions of them.
package rlockotel

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/rlock"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation is the name of the Meter and Tracer this package uses.
const instrumentation = "github.com/locksmith-go/locksmith/adapters/rlockotel"

// The attribute keys this package records.
const (
	KeyLockName       = attribute.Key("rlock.lock.name")
	KeyLockOwner      = attribute.Key("rlock.lock.owner")
	KeyAcquireOutcome = attribute.Key("rlock.acquire.outcome")
	KeyReentrant      = attribute.Key("rlock.acquire.reentrant")
	KeyHandOff        = attribute.Key("rlock.handoff")
	KeyReleaseResult  = attribute.Key("rlock.release.result")
	KeyRenewalResult  = attribute.Key("rlock.renewal.result")
	KeyLostCause      = attribute.Key("rlock.lost.cause")
	KeyEventKind      = attribute.Key("conn.event.kind")
	KeyConnRole       = attribute.Key("conn.role")
	KeyPubSubCommand  = attribute.Key("rlock.pubsub.command")
	KeyOrphanOutcome  = attribute.Key("rlock.orphan.outcome")
)

// Options configures an Observer. The zero value uses the global providers.
type Options struct {
	// MeterProvider provides the Meter; nil: otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// TracerProvider provides the Tracer; nil: otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// NoSpans turns the spans off (metrics only).
	NoSpans bool
}

// Observer records rlock's events as OpenTelemetry metrics and spans. It is safe for concurrent use; its methods
// never block (they record, and the SDK's span processors export in the background).
type Observer struct {
	rlock.NopObserver

	tracer trace.Tracer // nil: no spans

	acquire, hold, renewalTook     metric.Float64Histogram
	releases, renewals, lost       metric.Int64Counter
	renewalFailures, conns, denied metric.Int64Counter
	orphans                        metric.Int64Counter

	// The measurement options of the fixed attribute values, made once: an event records without allocating.
	outcome                             map[rlock.AcquireOutcome]metric.MeasurementOption
	acquired                            metric.MeasurementOption
	released, notHeld, releaseErr       metric.MeasurementOption
	renewed, gone, lostLock, lostExpiry metric.MeasurementOption
	orphanReleased, orphanExpired       metric.MeasurementOption

	mu      sync.Mutex
	clients []*rlock.Client
}

var _ rlock.Observer = (*Observer)(nil)

// New returns an Observer with its instruments created. It does not block; it fails only when the MeterProvider
// refuses an instrument.
func New(opts Options) (*Observer, error) {
	mp, tp := opts.MeterProvider, opts.TracerProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	m := mp.Meter(instrumentation)
	o := &Observer{}
	if !opts.NoSpans {
		o.tracer = tp.Tracer(instrumentation)
	}
	var errs []error
	hist := func(name, desc string, bounds ...float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(bounds...))
		errs = append(errs, err)
		return h
	}
	count := func(name, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	o.acquire = hist("locksmith.acquire.duration", "Time from an acquire call to its end, by outcome.",
		0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
	o.hold = hist("locksmith.hold.duration", "Time from a lock's first acquisition to the release of its last hold.",
		0.001, 0.01, 0.1, 1, 10, 60, 300, 1800, 3600)
	o.renewalTook = hist("locksmith.renewal.duration", "Round trip of one watchdog renewal EVALSHA.",
		0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1)
	o.releases = count("locksmith.releases", "Releases of a lock's last hold, by result.")
	o.renewals = count("locksmith.renewals", "Locks the watchdog renewed, or found no longer held.")
	o.renewalFailures = count("locksmith.renewal.failures", "Watchdog renewal EVALSHAs that failed.")
	o.lost = count("locksmith.locks.lost", "Held locks lost without an Unlock, by cause.")
	o.conns = count("locksmith.connection.events", "Changes in the transport's connections.")
	o.denied = count("locksmith.pubsub.denied", "The server's first refusal of a pub/sub permission.")
	o.orphans = count("locksmith.grants.orphaned",
		"Grants no caller held, released by the client or left to their lease, by outcome.")
	held, err := m.Int64ObservableGauge("locksmith.locks.held",
		metric.WithDescription("Locks held through the watched Clients."))
	errs = append(errs, err)
	waiters, err := m.Int64ObservableGauge("locksmith.waiters",
		metric.WithDescription("Calls of the watched Clients waiting for a lock, permits or a latch."))
	errs = append(errs, err)
	refused, err := m.Int64ObservableCounter("locksmith.publishes.refused",
		metric.WithDescription("Wake-up messages of the watched Clients' scripts the server refused."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if _, err := m.RegisterCallback(func(_ context.Context, ob metric.Observer) error {
		var s rlock.Stats
		for _, c := range o.watched() {
			cs := c.Stats()
			s.Held, s.Waiters, s.PublishesRefused = s.Held+cs.Held, s.Waiters+cs.Waiters, s.PublishesRefused+cs.PublishesRefused
		}
		ob.ObserveInt64(held, int64(s.Held))
		ob.ObserveInt64(waiters, int64(s.Waiters))
		ob.ObserveInt64(refused, s.PublishesRefused)
		return nil
	}, held, waiters, refused); err != nil {
		return nil, err
	}

	attr := func(k attribute.Key, v string) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(k.String(v)))
	}
	o.outcome = map[rlock.AcquireOutcome]metric.MeasurementOption{}
	for _, oc := range []rlock.AcquireOutcome{rlock.AcquireTimeout, rlock.AcquireCanceled, rlock.AcquireError} {
		o.outcome[oc] = attr(KeyAcquireOutcome, oc.String())
	}
	o.acquired = attr(KeyAcquireOutcome, "acquired")
	o.released, o.notHeld, o.releaseErr = attr(KeyReleaseResult, "released"), attr(KeyReleaseResult, "not_held"),
		attr(KeyReleaseResult, "error")
	o.renewed, o.gone = attr(KeyRenewalResult, "renewed"), attr(KeyRenewalResult, "gone")
	o.lostLock, o.lostExpiry = attr(KeyLostCause, "lost"), attr(KeyLostCause, "lease_expired")
	o.orphanReleased, o.orphanExpired = attr(KeyOrphanOutcome, "released"), attr(KeyOrphanOutcome, "expired")
	// An orphan is rare, and an alert on its increase needs both series recorded at zero before the first one.
	o.orphans.Add(context.Background(), 0, o.orphanReleased)
	o.orphans.Add(context.Background(), 0, o.orphanExpired)
	return o, nil
}

// Watch adds client to the Clients whose state (locks held, waiters, refused messages) the gauges report, summed.
// It does not block and is safe for concurrent use.
func (o *Observer) Watch(client *rlock.Client) {
	o.mu.Lock()
	o.clients = append(o.clients, client)
	o.mu.Unlock()
}

func (o *Observer) watched() []*rlock.Client {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.clients
}

// Acquired records the acquire's wait and its span.
func (o *Observer) Acquired(e rlock.AcquiredEvent) {
	o.acquire.Record(context.Background(), e.Wait.Seconds(), o.acquired)
	if o.tracer != nil {
		o.span(e.Ctx, "rlock.acquire", e.Wait, e.Name, e.Owner, nil, KeyAcquireOutcome.String("acquired"),
			KeyReentrant.Bool(e.Reentrant), KeyHandOff.Bool(e.HandOff))
	}
}

// AcquireFailed records the failed acquire's wait and its span.
func (o *Observer) AcquireFailed(e rlock.AcquireFailedEvent) {
	opt, ok := o.outcome[e.Outcome]
	if !ok { // an outcome added to rlock after this package
		opt = metric.WithAttributes(KeyAcquireOutcome.String(e.Outcome.String()))
	}
	o.acquire.Record(context.Background(), e.Wait.Seconds(), opt)
	if o.tracer != nil {
		var err error
		if e.Outcome == rlock.AcquireError {
			err = e.Err
		}
		o.span(e.Ctx, "rlock.acquire", e.Wait, e.Name, e.Owner, err, KeyAcquireOutcome.String(e.Outcome.String()))
	}
}

// Released records the release, its hold time and its span.
func (o *Observer) Released(e rlock.ReleasedEvent) {
	ctx := context.Background()
	switch {
	case e.Err == nil:
		o.releases.Add(ctx, 1, o.released)
		o.hold.Record(ctx, e.Held.Seconds())
	case errors.Is(e.Err, rlock.ErrNotHeld):
		o.releases.Add(ctx, 1, o.notHeld)
	default:
		o.releases.Add(ctx, 1, o.releaseErr)
	}
	if o.tracer != nil {
		o.span(e.Ctx, "rlock.unlock", e.Took, e.Name, e.Owner, e.Err, KeyHandOff.Bool(e.HandOff))
	}
}

// RenewalBatch records a renewal EVALSHA.
func (o *Observer) RenewalBatch(e rlock.RenewalEvent) {
	ctx := context.Background()
	o.renewalTook.Record(ctx, e.Took.Seconds())
	if e.Err != nil {
		o.renewalFailures.Add(ctx, 1)
		return
	}
	o.renewals.Add(ctx, int64(e.Renewed), o.renewed)
	o.renewals.Add(ctx, int64(e.Gone), o.gone)
}

// Lost records a lock lost without an Unlock.
func (o *Observer) Lost(e rlock.LostEvent) {
	opt := o.lostLock
	if errors.Is(e.Cause, rlock.ErrLeaseExpired) {
		opt = o.lostExpiry
	}
	o.lost.Add(context.Background(), 1, opt)
}

// Connection records a change in the transport's connections.
func (o *Observer) Connection(e conn.Event) {
	o.conns.Add(context.Background(), 1,
		metric.WithAttributes(KeyEventKind.String(e.Kind.String()), KeyConnRole.String(e.Role)))
}

// PubSubDenied records the server's first refusal of a pub/sub permission.
func (o *Observer) PubSubDenied(e rlock.PubSubDeniedEvent) {
	o.denied.Add(context.Background(), 1, metric.WithAttributes(KeyPubSubCommand.String(e.Command)))
}

// Orphan records an orphaned grant's outcome: released, or left to its lease.
func (o *Observer) Orphan(e rlock.OrphanEvent) {
	opt := o.orphanExpired
	if e.Released {
		opt = o.orphanReleased
	}
	o.orphans.Add(context.Background(), 1, opt)
}

// span records a finished span of took ending now, a child of the span in parent's values.
func (o *Observer) span(parent context.Context, name string, took time.Duration, lock, owner string, err error,
	attrs ...attribute.KeyValue) {
	if parent == nil {
		parent = context.Background()
	}
	end := time.Now()
	_, s := o.tracer.Start(parent, name, trace.WithTimestamp(end.Add(-took)), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(KeyLockName.String(lock), KeyLockOwner.String(owner)), trace.WithAttributes(attrs...))
	if err != nil {
		s.RecordError(err)
		s.SetStatus(codes.Error, err.Error())
	}
	s.End(trace.WithTimestamp(end))
}

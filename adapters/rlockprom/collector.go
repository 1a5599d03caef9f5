// Package rlockprom exports the lock events of package rlock as Prometheus metrics.
//
// A Collector is both an rlock.Observer (give it to rlock.Config.Observer) and a prometheus.Collector (register
// it). Events are counted as they happen; the state gauges (locks held, waiters) are read from the Clients given
// to Watch at each scrape:
//
//	m := rlockprom.New(rlockprom.Options{})
//	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: addr}, Observer: m})
//	...
//	m.Watch(c)
//	prometheus.MustRegister(m)
//
// The metrics (namespace "locksmith" by default):
//
//	locksmith_acquire_wait_seconds{outcome}       histogram: from an acquire call to its end; outcome is
//	                                              acquired, timeout (the wait ran out), canceled (its context
//	                                              ended) or error
//	locksmith_hold_seconds                        histogram: from a lock's first acquisition to its release
//	locksmith_releases_total{result}              released, not_held (the lock was lost or never held), error
//	locksmith_renewals_total{result}              locks renewed by the watchdog, or found gone (lost)
//	locksmith_renewal_batch_seconds               histogram: the round trip of one renewal EVALSHA
//	locksmith_renewal_batch_failures_total        renewal EVALSHAs that failed (retried until the lease ends)
//	locksmith_locks_lost_total{cause}             lost (the server no longer held it) or lease_expired (locally)
//	locksmith_connection_events_total{kind,role}  connected, lost, reconnected, failover, resubscribed, by the
//	                                              connection's role (command, pubsub, sentinel; "" for failover)
//	locksmith_pubsub_denied_total{command}        the server's first refusal of publish or subscribe permission
//	locksmith_publishes_refused_total             wake-up messages the server refused (see docs/acl.md)
//	locksmith_grants_orphaned_total{outcome}      grants no caller held (an acquire whose outcome was unknown,
//	                                              or one abandoned while granted): released by the client, or
//	                                              expired (left to its lease), as rlock.Stats' OrphansReleased
//	                                              and OrphansExpired count them; both are exported from zero
//	locksmith_locks_held                          gauge: locks held through the watched Clients
//	locksmith_waiters                             gauge: calls waiting for a lock, permits or a latch
//
// Lock names are not labels: a service may use millions of them. Counting costs a few atomic operations per
// event and allocates nothing; the Observer methods never block.
package rlockprom

import (
	"errors"
	"sync"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/rlock"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configures a Collector. The zero value is ready to use.
type Options struct {
	// Namespace prefixes every metric name. Default "locksmith".
	Namespace string
	// ConstLabels are added to every metric (a service name, a Redis deployment).
	ConstLabels prometheus.Labels
	// WaitBuckets are the acquire wait histogram's buckets, in seconds. Default: 0.5 ms to about 16 s, doubling.
	WaitBuckets []float64
	// HoldBuckets are the hold time histogram's buckets, in seconds. Default: 1 ms to about 70 min, times 4.
	HoldBuckets []float64
}

// Collector counts rlock's events and reports them, with the watched Clients' state, as Prometheus metrics. It is
// safe for concurrent use; its Observer methods never block.
type Collector struct {
	rlock.NopObserver

	acquireWait   *prometheus.HistogramVec
	hold          prometheus.Histogram
	releases      *prometheus.CounterVec
	renewals      *prometheus.CounterVec
	renewalBatch  prometheus.Histogram
	renewalFailed prometheus.Counter
	lost          *prometheus.CounterVec
	connEvents    *prometheus.CounterVec
	denied        *prometheus.CounterVec
	orphans       *prometheus.CounterVec

	// The orphan counters by outcome, made in New: an orphan is rare, and an alert on its increase needs both
	// series exported at zero before the first one.
	orphansReleased, orphansExpired prometheus.Counter

	heldDesc, waitersDesc, refusedDesc *prometheus.Desc

	mu      sync.Mutex
	clients []*rlock.Client
}

var _ rlock.Observer = (*Collector)(nil)
var _ prometheus.Collector = (*Collector)(nil)

// New returns a Collector with its metrics defined and nothing counted. It does not block.
func New(opts Options) *Collector {
	ns := opts.Namespace
	if ns == "" {
		ns = "locksmith"
	}
	if opts.WaitBuckets == nil {
		opts.WaitBuckets = prometheus.ExponentialBuckets(0.0005, 2, 16)
	}
	if opts.HoldBuckets == nil {
		opts.HoldBuckets = prometheus.ExponentialBuckets(0.001, 4, 12)
	}
	cl := opts.ConstLabels
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help, ConstLabels: cl}, labels)
	}
	c := &Collector{
		acquireWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "acquire_wait_seconds",
			Help:    "Time from an acquire call to its end, by outcome: acquired, timeout, canceled or error.",
			Buckets: opts.WaitBuckets, ConstLabels: cl}, []string{"outcome"}),
		hold: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "hold_seconds",
			Help:    "Time from a lock's first acquisition to the release of its last hold.",
			Buckets: opts.HoldBuckets, ConstLabels: cl}),
		releases: counter("releases_total", "Releases of a lock's last hold, by result: released, not_held or error.",
			"result"),
		renewals: counter("renewals_total", "Locks the watchdog renewed (renewed) or found no longer held (gone).",
			"result"),
		renewalBatch: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns,
			Name: "renewal_batch_seconds", Help: "Round trip of one watchdog renewal EVALSHA.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), ConstLabels: cl}),
		renewalFailed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns,
			Name: "renewal_batch_failures_total", Help: "Watchdog renewal EVALSHAs that failed.", ConstLabels: cl}),
		lost: counter("locks_lost_total", "Held locks lost without an Unlock, by cause: lost or lease_expired.",
			"cause"),
		connEvents: counter("connection_events_total",
			"Changes in the transport's connections, by kind and connection role.", "kind", "role"),
		denied: counter("pubsub_denied_total",
			"The server's first refusal of a pub/sub permission, by command: publish or subscribe.", "command"),
		heldDesc: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "locks_held"),
			"Locks held through the watched Clients.", nil, cl),
		waitersDesc: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "waiters"),
			"Calls of the watched Clients waiting for a lock, permits or a latch.", nil, cl),
		refusedDesc: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "publishes_refused_total"),
			"Wake-up messages of the watched Clients' scripts the server refused for want of permission.", nil, cl),
		orphans: counter("grants_orphaned_total", "Grants no caller held (an acquire whose outcome was unknown, "+
			"or one abandoned while granted), by outcome: released, or expired (left to its lease).", "outcome"),
	}
	c.orphansReleased = c.orphans.WithLabelValues("released")
	c.orphansExpired = c.orphans.WithLabelValues("expired")
	return c
}

// Watch adds client to the Clients whose state (locks held, waiters, refused messages) the gauges report, summed.
// It does not block and is safe for concurrent use. A closed Client reports nothing held.
func (c *Collector) Watch(client *rlock.Client) {
	c.mu.Lock()
	c.clients = append(c.clients, client)
	c.mu.Unlock()
}

// Acquired records the wait of a successful acquire.
func (c *Collector) Acquired(e rlock.AcquiredEvent) {
	c.acquireWait.WithLabelValues("acquired").Observe(e.Wait.Seconds())
}

// AcquireFailed records the wait of an acquire that ended without the lock, by its outcome.
func (c *Collector) AcquireFailed(e rlock.AcquireFailedEvent) {
	c.acquireWait.WithLabelValues(e.Outcome.String()).Observe(e.Wait.Seconds())
}

// Released records a release's hold time and result.
func (c *Collector) Released(e rlock.ReleasedEvent) {
	switch {
	case e.Err == nil:
		c.releases.WithLabelValues("released").Inc()
		c.hold.Observe(e.Held.Seconds())
	case errors.Is(e.Err, rlock.ErrNotHeld):
		c.releases.WithLabelValues("not_held").Inc()
	default:
		c.releases.WithLabelValues("error").Inc()
	}
}

// RenewalBatch records a renewal EVALSHA.
func (c *Collector) RenewalBatch(e rlock.RenewalEvent) {
	c.renewalBatch.Observe(e.Took.Seconds())
	if e.Err != nil {
		c.renewalFailed.Inc()
		return
	}
	c.renewals.WithLabelValues("renewed").Add(float64(e.Renewed))
	c.renewals.WithLabelValues("gone").Add(float64(e.Gone))
}

// Lost records a lock lost without an Unlock.
func (c *Collector) Lost(e rlock.LostEvent) {
	cause := "lost"
	if errors.Is(e.Cause, rlock.ErrLeaseExpired) {
		cause = "lease_expired"
	}
	c.lost.WithLabelValues(cause).Inc()
}

// Connection records a change in the transport's connections.
func (c *Collector) Connection(e conn.Event) {
	c.connEvents.WithLabelValues(e.Kind.String(), e.Role).Inc()
}

// PubSubDenied records the server's first refusal of a pub/sub permission.
func (c *Collector) PubSubDenied(e rlock.PubSubDeniedEvent) {
	c.denied.WithLabelValues(e.Command).Inc()
}

// Orphan records an orphaned grant's outcome: released, or left to its lease.
func (c *Collector) Orphan(e rlock.OrphanEvent) {
	if e.Released {
		c.orphansReleased.Inc()
		return
	}
	c.orphansExpired.Inc()
}

// Describe sends the descriptors of every metric. Part of prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.collectors() {
		m.Describe(ch)
	}
	ch <- c.heldDesc
	ch <- c.waitersDesc
	ch <- c.refusedDesc
}

// Collect sends every metric, reading the watched Clients' Stats (each costs a brief lock of each of its shards,
// no I/O). Part of prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.collectors() {
		m.Collect(ch)
	}
	c.mu.Lock()
	clients := c.clients
	c.mu.Unlock()
	var held, waiters int
	var refused int64
	for _, client := range clients {
		s := client.Stats()
		held += s.Held
		waiters += s.Waiters
		refused += s.PublishesRefused
	}
	ch <- prometheus.MustNewConstMetric(c.heldDesc, prometheus.GaugeValue, float64(held))
	ch <- prometheus.MustNewConstMetric(c.waitersDesc, prometheus.GaugeValue, float64(waiters))
	ch <- prometheus.MustNewConstMetric(c.refusedDesc, prometheus.CounterValue, float64(refused))
}

// collectors are the Collector's own metric vectors.
func (c *Collector) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.acquireWait, c.hold, c.releases, c.renewals, c.renewalBatch, c.renewalFailed,
		c.lost, c.connEvents, c.denied, c.orphans}
}

package rlock

import (
	"context"
	"hash/maphash"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/ctxwatch"
	"github.com/locksmith-go/locksmith/timer"
)

// Client is this project's RedissonClient: one identity (a random UUID, Redisson's connection-manager id), one
// transport (conn.Client: pooled, auto-pipelined connections and a pub/sub connection) and one timing wheel (the
// transport's) that carries every watchdog renewal, lease expiry and bounded wait, and a second, 1 ms wheel for
// waits shorter than 64 ms (shortwait.go), whose worker is the one goroutine the Client starts (with the first such
// wait; Close stops it). Every lock, waiter and renewal is a small struct driven by futures, pub/sub messages and
// timeouts.
//
// A Client is safe for concurrent use; create one per process (or per Redis deployment) and share it.
type Client struct {
	conn     *conn.Client
	ownsConn bool
	timer    *timer.Timer
	short    *timer.Timer // waits shorter than shortWaitMax (shortwait.go)
	cfg      resolved
	id       string    // the client UUID: the first half of every owner id
	epoch    time.Time // monotonic origin of now()
	log      *slog.Logger
	obs      Observer
	observed bool // obs is not a NopObserver: events are worth building (their durations cost clock readings)
	// recycled, when set (by tests, before the first call), sees each blocking call's struct just before it is
	// recycled (recycle.go): a *syncLockCall or a *syncUnlockOp.
	recycled func(any)

	cluster   bool          // the transport talks to a Redis Cluster: renewals are batched per slot (batchKeyOf)
	nextOwner atomic.Uint64 // last owner id handed out; owner ids start at 1
	closed    atomic.Bool
	// waitUnsupported: the server (or a proxy) has no WAIT (conn reported conn.ErrWaitUnsupported), so acquires no
	// longer wait for replicas although Config.SyncReplicas asks for it.
	waitUnsupported atomic.Bool
	// The server refused this client a publish (pubDenied) or a subscription (subDenied) for want of permission;
	// pubRefused counts the messages refused (pubsubdenied.go).
	pubDenied, subDenied atomic.Bool
	pubRefused           atomic.Int64

	seed   maphash.Seed
	shards [numShards]shard

	wd         watchdog
	retries    *timer.Group // commands parked on the timer for a retry, run by Close if it comes first
	grantCache              // queue entry arguments (lockqueue.go)
	// leaves counts the departures from the server's queues of waiters in flight (lockCall.leave), which Close
	// waits for, up to leaveWait.
	leaves  inflight
	orphans orphanCounts
}

// numShards splits the client's local state (held locks, waiter queues) over independent mutexes, so that
// goroutines working on different names rarely meet (a service may run a thousand goroutines on names of their
// own).
const numShards = 64

// shard holds the local state of the objects (locks, semaphores, latches, limiters) whose names hash to it. mu
// guards the maps and every field documented as "guarded by the shard mutex" in the holds, queues and waiters of
// these objects. Nothing blocking, no conn call and no promise completion happens while mu is held: decisions are
// made under mu, actions after it.
type shard struct {
	mu         sync.Mutex
	c          *Client                 // the client the shard belongs to
	holds      map[holdKey]*hold       // held locks, by name and hash field
	queues     map[string]*queue       // channels with waiters of this client
	lockQueues map[string]*queue       // the plain and fenced locks' queues, by lock name
	sleepers   *queue                  // waiters woken by their timer alone (rate limiters)
	watches    ctxwatch.Set[*waiter]   // calls' contexts by Done channel (ctxwatch.go)
	serial     map[holdKey]*holdSerial // owners' commands in flight (serial.go)
	freeSerial *holdSerial             // serial's unused entries, for reuse
	// dueLeaves are the calls abandoned while an attempt that may queue them was in flight: a leave is counted for
	// each until that attempt is settled (dueLeaveLocked). Nil until one is.
	dueLeaves map[*waiter]struct{}
	// doubts are the holds the server may hold more times than recorded here, for grants their owner's callers do
	// not believe in (orphan.go): their last Unlock releases or reports what it finds left. Nil until one is.
	doubts map[*hold]doubt
	_      [128 - 11*8]byte // keep neighbouring shards' mutexes off one cache line
}

// NewClient creates a Client from cfg: it validates cfg, connects (bounded by cfg.Conn.DialTimeout) and draws the
// client UUID. It blocks until the transport is up. Errors are *ArgumentError for a bad Config, or conn's errors
// (conn.ErrInvalidConfig, a *conn.ConnError) when the server cannot be reached.
func NewClient(cfg Config) (*Client, error) {
	r, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, nop := r.Observer.(NopObserver); !nop {
		// The Observer hears of the transport's connection events after the caller's own hook, if any.
		user, obs := r.Conn.OnEvent, callbackObserver{r.Observer, r.Logger}
		r.Conn.OnEvent = func(e conn.Event) {
			if user != nil {
				user(e)
			}
			obs.Connection(e)
		}
	}
	cc, err := conn.New(r.Conn)
	if err != nil {
		return nil, err
	}
	c := newClient(cc, r)
	c.ownsConn = true
	return c, nil
}

// NewClientFromURL creates a Client from a URL, every other setting at its default. conn.ParseURL reads the URL;
// it accepts six schemes, in any letter case:
//
//	redis://[[user]:password@]host[:port][/db][?options]                                     one server
//	rediss://...                                                                             one server, over TLS
//	redis-sentinel://[[user]:password@]host1[:port1][,host2[:port2]...]/mastername[?options]  a master found through Sentinel
//	rediss-sentinel://...                                                                    the same, over TLS (Sentinels too)
//	redis-cluster://[[user]:password@]host1[:port1][,host2[:port2]...][?options]             a Redis Cluster, from seed nodes
//	rediss-cluster://...                                                                     the same, over TLS
//
// Among the options (conn.ParseURL lists them all, with their defaults): lazy_connect=true makes NewClientFromURL
// return at once, even with every server down (calls fail with conn.ErrUnavailable until one answers); for the
// rediss schemes, tls_ca_file names a PEM file of the CA(s) to trust instead of the system's, tls_cert_file and
// tls_key_file a client certificate and its private key (both or neither), and tls_insecure_skip_verify=true
// accepts any server certificate (for tests only: anyone on the path can read and change the traffic).
// Percent-escape '%', '@', '/', '?', '#' and ':' in a password. Errors match conn.ErrInvalidConfig for a bad URL
// and never show its password. It blocks like NewClient (not with lazy_connect).
func NewClientFromURL(rawURL string) (*Client, error) {
	cc, err := conn.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	return NewClient(Config{Conn: cc})
}

func newClient(cc *conn.Client, r resolved) *Client {
	c := &Client{
		conn:  cc,
		timer: cc.Timer(),
		short: newShortWaitTimer(),
		cfg:   r,
		id:    uuid.NewString(),
		epoch: time.Now(),
		log:   r.Logger,
		obs:   r.Observer,
		seed:  maphash.MakeSeed(),
	}
	_, nop := r.Observer.(NopObserver)
	c.observed = !nop
	if c.observed {
		c.obs = callbackObserver{r.Observer, r.Logger}
	}
	c.cluster = cc.IsCluster()
	for i := range c.shards {
		sh := &c.shards[i]
		sh.c = c
		sh.holds = make(map[holdKey]*hold)
		sh.queues = make(map[string]*queue)
		sh.lockQueues = make(map[string]*queue)
		sh.sleepers = &queue{c: c, sh: sh}
	}
	c.wd.init(c)
	c.watchdogGrant.lease = min(r.WatchdogTimeout, queueLiveness)
	c.watchdogGrant.specs = specsOf("g" + strconv.FormatInt(c.watchdogGrant.lease.Milliseconds(), 10))
	c.retries = timer.NewGroup(c.timer)
	return c
}

// pub returns the publish command every publishing script takes last (scripts.Publishes): PUBLISH, or SPUBLISH on
// a cluster with sharded pub/sub, which is where conn subscribes the channels (Redisson makes the same choice). It
// is read at each call, not once: a cluster transport made with LazyConnect while no node answered learns whether
// the servers have sharded pub/sub only when a node first answers, and until then says PUBLISH. The read is one
// atomic load on a cluster and nothing elsewhere.
func (c *Client) pub() string {
	if !c.cluster {
		return "publish"
	}
	return c.conn.PublishCommand()
}

// ID returns the client UUID, the first half of the owner ids this client makes (Redisson's connection-manager
// id). It does not block.
func (c *Client) ID() string { return c.id }

// Conn returns the transport, for commands outside the lock API. It does not block. Closing it closes the Client's
// transport: close the Client instead.
func (c *Client) Conn() *conn.Client { return c.conn }

// Lock returns a handle on the lock called name: a cheap value that sends nothing until it is used, safe for
// concurrent use, and interchangeable with any other handle on the same name from the same Client. An empty name
// is reported by the handle's methods as an *ArgumentError.
func (c *Client) Lock(name string) *Lock {
	return &Lock{lockObject: c.newLockObject(name, kindPlain, nil)}
}

// Close stops the client. It does not release the locks still held: it stops their renewal and cancels their held
// contexts with cause ErrClosed, so each lock stays on the server until its lease runs out (the watchdog timeout
// for watchdog locks), exactly as when a process dies. Release them with Unlock before Close to free them at once.
// Every waiter still waiting fails with ErrClosed, and every later call returns ErrClosed. Waiters queued on the
// server (plain and fenced locks) are taken out of its queue, so that they do not hold it until their entries
// expire; Close waits for those departures, and for those of waiters that gave up just before, at most a second.
//
// Close then closes the transport, if NewClient created it, and waits for its goroutines (and the timer's) to exit;
// it blocks for at most that second plus the time the transport takes to close. It is safe for concurrent use;
// calls after the first return nil. Inside a future callback or an Observer method it returns ErrInCallback and
// closes nothing: it would wait for the goroutine it runs on. Call it from another goroutine.
func (c *Client) Close() error {
	if err := inCallback(); err != nil {
		return err
	}
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	var holds []*hold
	var waiters []*waiter
	var subs []*queue
	var stops []func() bool
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for k, h := range sh.holds {
			h.state = holdGone
			h.stopTimerLocked()
			holds = append(holds, h)
			delete(sh.holds, k)
		}
		for _, m := range [2]map[string]*queue{sh.queues, sh.lockQueues} {
			for key, q := range m {
				waiters = q.closeLocked(waiters)
				q.dead = true
				subs = append(subs, q)
				delete(m, key)
			}
		}
		waiters = sh.sleepers.closeLocked(waiters)
		sh.doubts = nil
		stops = sh.watches.Close(stops) // the calls they watch are failed by Close or by their replies
		sh.mu.Unlock()
	}
	for _, stop := range stops {
		stop()
	}
	c.wd.stop()
	for _, h := range holds {
		h.cancel(ErrClosed)
	}
	for _, w := range waiters {
		if lc, ok := w.call.(*lockCall); ok && w.queued {
			lc.leave(false, nil, nil) // its entry would hold the queue until it expires
		}
		w.call.fail(ErrClosed)
	}
	for _, q := range subs {
		q.closeSubscription()
	}
	// Retries parked on the timer fail now: the transport's Close stops the timer, which would drop them.
	c.retries.Close()
	c.awaitLeaves()
	c.stopShortWaits()
	if c.ownsConn {
		return c.conn.Close()
	}
	return nil
}

// shard returns the shard of a lock name.
func (c *Client) shard(name string) *shard {
	return &c.shards[maphash.String(c.seed, name)%numShards]
}

// now is the client's monotonic clock: the time since the client was created. Deadlines (lease ends, wait ends)
// are kept on it, so wall-clock steps change nothing.
func (c *Client) now() time.Duration { return time.Since(c.epoch) }

// background is the context of commands whose outcome must be learned even when the caller stops waiting (an
// acquire that may be granted, a release): their bound is the transport's response timeout. The caller's context
// bounds the caller's wait, not the command, because a command abandoned in flight would leave its effect on the
// server unknown.
var background = context.Background()

// Stats is a snapshot of a Client's local lock state, for metrics and tests.
type Stats struct {
	Held    int // locks held through this client (one per name and owner, whatever the hold count)
	Waiters int // calls waiting: acquires queued behind another holder, permits and latches waited for
	Queues  int // channels with waiters (each has one subscription)
	// PublishesRefused counts, since the client was created, the wake-up messages of its scripts that the server
	// refused for want of pub/sub permission (see Observer.PubSubDenied). The operations themselves succeeded.
	PublishesRefused int64
	// OrphansReleased counts, since the Client was created, the grants no caller held that the client released:
	// grants an acquire may have made when its outcome was unknown (*OutcomeUnknownError), and grants that arrived
	// for calls abandoned meanwhile. An unknown outcome that turned out not to be a grant is not counted.
	OrphansReleased int64
	// OrphansExpired counts, since the Client was created, such grants (made, or possibly made) that were left to
	// their lease: the server did not answer before the lease passed, the Client was closed, or the owner was
	// pinned with WithOwner and its holds could not be told apart.
	OrphansExpired int64
}

// Stats returns a snapshot of the client's local lock state. It takes each shard's mutex briefly, so it costs
// O(shards), not O(locks); it does not block on I/O and is safe for concurrent use.
func (c *Client) Stats() Stats {
	s := Stats{PublishesRefused: c.pubRefused.Load()}
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		s.Held += len(sh.holds)
		for _, q := range sh.queues {
			if q.n > 0 {
				s.Queues++
				s.Waiters += q.n
			}
		}
		for _, q := range sh.lockQueues {
			if q.n > 0 {
				s.Queues++
				s.Waiters += q.n
			}
		}
		s.Waiters += sh.sleepers.n
		sh.mu.Unlock()
	}
	s.OrphansReleased, s.OrphansExpired = c.orphans.released.Load(), c.orphans.expired.Load()
	return s
}

// awaitLeaves waits, at most leaveWait, for the departures from the servers' queues of waiters that are in flight
// (a waiter that gave up, or one Close failed), so that a process that closes its Client does not leave its
// waiters' entries holding a queue until they expire.
func (c *Client) awaitLeaves() { c.leaves.wait(leaveWait) }

// inflight counts operations in flight that Close waits for. Unlike a sync.WaitGroup, it may be added to while
// someone waits (a leave that starts as Close begins).
type inflight struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0, while someone waits
}

func (f *inflight) add() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

func (f *inflight) done() {
	f.mu.Lock()
	if f.n--; f.n == 0 && f.zero != nil {
		close(f.zero)
		f.zero = nil
	}
	f.mu.Unlock()
}

// wait returns when nothing is in flight, or after d.
func (f *inflight) wait(d time.Duration) {
	f.mu.Lock()
	if f.n == 0 {
		f.mu.Unlock()
		return
	}
	if f.zero == nil {
		f.zero = make(chan struct{})
	}
	zero := f.zero
	f.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-zero:
	case <-t.C:
	}
}

// leaveWait bounds how long Close waits for the leaves in flight.
const leaveWait = time.Second

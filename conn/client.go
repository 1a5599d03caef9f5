package conn

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/timer"
)

// Cmd is one command of a Pipeline or a SendAndWait: a script run with EVALSHA (Script non-nil, with Keys and Args),
// or a plain command made of Args (the name first).
type Cmd struct {
	Script *Script  // nil: a plain command made of Args
	Keys   []string // script keys; on a cluster the first one routes the command
	Args   []string
	// RouteKey, when set, is the key a cluster Client routes a plain command by, for commands whose first key is
	// not their first argument (see Client.DoKey). Ignored elsewhere.
	RouteKey string
}

// Client is the connection to one Redis deployment — a standalone server, a master found through Sentinel, or a
// Redis Cluster (see Config) — with a pool of auto-pipelined connections per node on gnet event loops (or
// crypto/tls connections for rediss://), a dedicated pub/sub connection per node, and a timing wheel. All its
// methods are safe for concurrent use. See the package documentation for the design.
type Client struct {
	cfg      Config
	eng      *engine // nil over TLS
	tm       *timer.Timer
	ownTimer bool

	ctx    context.Context // cancelled by Close: aborts connection attempts and topology queries
	cancel context.CancelFunc
	wg     sync.WaitGroup // dial goroutines, stream reader/writer goroutines, topology refreshes

	closed    atomic.Bool
	closeOnce sync.Once

	// Exactly one of node and rt is set, by New: a standalone Client's commands go straight to its node's pool,
	// with no routing cost; a Sentinel or cluster Client's go through the router, over its topology.
	node    *node
	rt      *router
	reg     *registry // the Client's subscriptions
	waitOff atomic.Bool
}

// New validates cfg, starts the event loops, finds the topology (asking the Sentinels for the master, or a seed
// node for the cluster's slot map) and dials the pools. With Config.LazyConnect it does all that in the background
// and returns at once, without an error from any server. Otherwise it blocks until every connection of the pools
// has connected or failed (each bounded by DialTimeout) and returns an error if none connected: a *ConnError matching
// ErrUnavailable and wrapping the cause (connection refused, timeout, a wrong handshake answer, no Sentinel or seed
// answering...), or matching ErrAuth (credentials or permissions refused) or ErrInvalidConfig (a database, client
// name or TLS setting the server refuses) instead, which no retry will fix. Connections that failed while others
// succeeded are retried in the background. Close the Client when done.
func New(cfg Config) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, tm: cfg.Timer}
	if c.tm == nil {
		c.tm = timer.New(timer.Config{})
		c.ownTimer = true
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if cfg.TLS == nil {
		if c.eng, err = newEngine(cfg.EventLoops, cfg.Logger); err != nil {
			c.cancel()
			if c.ownTimer {
				_, _ = c.tm.Stop()
			}
			return nil, err
		}
	}
	switch cfg.topology() {
	case topoCluster:
		err = c.startCluster()
	case topoSentinel:
		err = c.startSentinel()
	default:
		c.reg = newRegistry(func(string) *pubsub { return c.node.pubsub(c, false) }, nil)
		c.node = newNode(c, cfg.Addr, &endpoint{cfg: &c.cfg})
		err = c.node.start(cfg.LazyConnect)
	}
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// Do sends one command (args[0] is its name) and returns its future without blocking. The future completes with the
// reply; an error reply completes it with err = *resp.ServerError (errors.As; the Value holds the reply too); a
// connection failure with a *ConnError (ErrConnLost or ErrUnavailable); after Close with ErrClosed.
//
// ctx bounds the command: if it ends first, the future completes at once with ctx.Err(), and the reply, when it
// comes, is read and discarded in order. A context that can never end (context.Background) costs nothing; one that
// can costs a context.AfterFunc registration (a few allocations). The command is queued on the least busy
// connection and written with whatever else is queued there. On a cluster it goes to the node of its key (see
// "Cluster" in doc.go: args[1] for most commands, the first key of EVAL/EVALSHA/FCALL, any master for keyless
// commands); use DoKey when the key is elsewhere. Safe for concurrent use.
func (c *Client) Do(ctx context.Context, args ...string) *future.Future[resp.Value] {
	if len(args) == 0 {
		return future.Completed(resp.Value{}, ErrEmptyCommand)
	}
	return c.do(ctx, nil, nil, args, "")
}

// DoKey is Do with an explicit routing key: on a cluster the command goes to the node serving key's slot (for a
// command whose first key is not args[1], such as OBJECT ENCODING key or XREAD ... STREAMS key). Elsewhere it is
// Do. Safe for concurrent use.
func (c *Client) DoKey(ctx context.Context, key string, args ...string) *future.Future[resp.Value] {
	if len(args) == 0 {
		return future.Completed(resp.Value{}, ErrEmptyCommand)
	}
	return c.do(ctx, nil, nil, args, key)
}

// Eval runs s with EVALSHA (keys, then args) and returns its future without blocking; see Do for the future and the
// context. On a NOSCRIPT reply the connection sends SCRIPT LOAD and the same EVALSHA again before completing the
// future: the caller never sees NOSCRIPT (unless the script keeps vanishing). keys and args are encoded before Eval
// returns and not kept. On a cluster it goes to the node of keys[0]'s slot, and keys in different slots fail with a
// *CrossSlotError (ErrCrossSlot) before anything is sent. Safe for concurrent use.
func (c *Client) Eval(ctx context.Context, s *Script, keys []string, args ...string) *future.Future[resp.Value] {
	if s == nil {
		return future.Completed(resp.Value{}, ErrEmptyCommand)
	}
	return c.do(ctx, s, keys, args, "")
}

// do queues one command. keys and args are encoded before do returns and never stored anywhere, so they do not
// escape and a caller's variadic arguments stay on its stack: one allocation per command, the promise. (The script
// travels separately from them for the same reason: escape analysis is field-insensitive, so storing a pointer
// loaded from a struct would leak the struct's slices too.)
func (c *Client) do(ctx context.Context, s *Script, keys, args []string, routeKey string) *future.Future[resp.Value] {
	if err := ctx.Err(); err != nil {
		return future.Completed(resp.Value{}, err)
	}
	if c.closed.Load() {
		return future.Completed(resp.Value{}, ErrClosed)
	}
	p := future.NewPromise[resp.Value]()
	if c.rt != nil {
		c.rt.do(p, nil, afterCancel(ctx, p), s, keys, args, routeKey)
		return p.Future()
	}
	n := c.node
	e := pending{p: p, kind: kindUser, slot: -1}
	pc := n.pool.pick()
	if pc != nil && pc.lane != nil {
		// The latency lane: a Get on this future reads the reply itself. Set before the promise is shared (the
		// context's AfterFunc below shares it).
		p.SetDriver(pc.lane)
		e.driven = true
	}
	if done := ctx.Done(); done != nil {
		// The connection watches ctx (ctxWatch) and fails p when it ends; a Get with the same context waits on p
		// alone.
		p.CancelledBy(done)
	}
	// A connection picked may close before send locks it: pick again (its replacement, or none).
	for range len(n.pool.all) + 1 {
		if pc == nil {
			break
		}
		if pc.send(ctx, e, s, keys, args) == nil {
			return p.Future()
		}
		pc = n.pool.pick()
		e.driven = false // the driver, if any, is the closed lane's: a Get on p finds nothing to read there
	}
	p.Fail(c.unavailable(n))
	return p.Future()
}

// Pipeline sends cmds on one connection, contiguous and in order, in one write (so that, say, a release and the
// next waiter's acquire reach the server back to back), and returns one future per command, completed as Do's. It
// does not block; ctx bounds every command as in Do. If a command is empty, every future fails with
// ErrEmptyCommand and nothing is sent. (Commands re-sent after NOSCRIPT go to the end of the connection's queue.)
//
// On a cluster, every command with a key (Cmd.Keys[0], Cmd.RouteKey, or the key of a plain command) must be served
// by one node, else every future fails with ErrCrossNode and nothing is sent; keyless commands (WAIT) follow the
// others. On a Sentinel or cluster Client a command that the server refuses without running it (MOVED, ASK,
// TRYAGAIN, CLUSTERDOWN, LOADING, READONLY) is sent again on its own, no longer contiguous with the others (use
// SendAndWait for a command and its WAIT); if no connection is usable, every future fails with ErrUnavailable.
// Safe for concurrent use.
func (c *Client) Pipeline(ctx context.Context, cmds ...Cmd) []*future.Future[resp.Value] {
	futs := make([]*future.Future[resp.Value], len(cmds))
	if len(cmds) == 0 {
		return futs
	}
	fail := func(err error) []*future.Future[resp.Value] {
		for i := range futs {
			futs[i] = future.Completed(resp.Value{}, err)
		}
		return futs
	}
	for i := range cmds {
		if cmds[i].Script == nil && len(cmds[i].Args) == 0 {
			return fail(errors.Join(ErrEmptyCommand, errors.New("conn: Pipeline command "+strconv.Itoa(i)+" is empty")))
		}
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if c.closed.Load() {
		return fail(ErrClosed)
	}
	n := c.node
	es := make([]pending, len(cmds))
	for i := range es {
		es[i] = pending{kind: kindUser, slot: -1}
	}
	if c.rt != nil {
		var err error
		if n, err = c.rt.pipelineNode(cmds, es); err != nil {
			return fail(err)
		}
	}
	var pc *pconn
	if n != nil {
		pc = n.pool.pick()
	}
	ps := make([]*future.Promise[resp.Value], len(cmds))
	for i := range ps {
		ps[i] = future.NewPromise[resp.Value]()
		futs[i] = ps[i].Future()
		es[i].p = ps[i]
		if pc != nil && pc.lane != nil {
			ps[i].SetDriver(pc.lane) // see do
			es[i].driven = true
		}
	}
	watchCtx := ctx // a standalone connection watches ctx itself (ctxWatch)
	if done := ctx.Done(); done != nil {
		for _, p := range ps {
			p.CancelledBy(done) // see do
		}
		if c.rt != nil {
			// One AfterFunc for the whole batch, unregistered with the last reply.
			es[len(es)-1].stop = context.AfterFunc(ctx, func() {
				for _, p := range ps {
					p.Fail(ctx.Err())
				}
			})
			watchCtx = context.Background()
		}
	}
	if n != nil {
		for range len(n.pool.all) + 1 {
			if pc == nil {
				break
			}
			if err := pc.sendBatch(watchCtx, es, cmds); err == nil {
				return futs
			}
			pc = n.pool.pick()
			for i := range es {
				es[i].driven = false // see do
			}
		}
	}
	if stop := es[len(es)-1].stop; stop != nil {
		stop()
	}
	err := c.unavailable(n)
	for _, p := range ps {
		p.Fail(err)
	}
	return futs
}

// Subscribe subscribes h to channel on a dedicated pub/sub connection and returns a future of the Subscription,
// without blocking. The future completes once the server confirmed the subscription (at once if the channel is
// already subscribed by another handler: a second subscriber sends nothing), so a caller can subscribe before
// retrying an operation and miss no message published after that. It fails with a *ConnError matching
// ErrUnavailable when the pub/sub connection is down, and with ErrClosed after Close. After a reconnect, a master
// switch (Sentinel) or a move of the channel's slot (cluster), the channel is subscribed again and its handlers
// receive KindResubscribed. On a cluster the channel is subscribed on the node serving its slot, with SSUBSCRIBE
// when the servers have sharded pub/sub (see PublishCommand). h runs on the pub/sub connection's reader goroutine
// and must not block. Safe for concurrent use.
func (c *Client) Subscribe(channel string, h Handler) *future.Future[*Subscription] {
	if c.closed.Load() {
		return future.Completed[*Subscription](nil, ErrClosed)
	}
	return c.reg.subscribe(channel, h)
}

// PublishCommand returns the command that reaches this Client's subscribers of a channel: "spublish" on a cluster
// whose servers have sharded pub/sub (Redis 7; probed once, by New or, with LazyConnect and no seed answering, by
// the first slot map fetched later) unless Config.DisableShardedPubSub, else "publish". Until the probe the answer
// is "publish", so read it for each command rather than once. Scripts that publish should take it as an argument
// (redis.call(ARGV[n], channel, message)), as Redisson's do, so that Go and Java clients on one cluster agree. It
// does not block or allocate. Safe for concurrent use.
func (c *Client) PublishCommand() string {
	if cl := c.cluster(); cl != nil && cl.sharded.Load() {
		return "spublish"
	}
	return "publish"
}

// IsCluster reports whether the Client talks to a Redis Cluster: a multi-key command or script then needs all its
// keys in one hash slot (KeySlot), and batches of keys must be grouped by slot.
func (c *Client) IsCluster() bool { return c.cluster() != nil }

// cluster returns the Client's cluster topology, nil unless it talks to a Redis Cluster.
func (c *Client) cluster() *cluster {
	if c.rt == nil {
		return nil
	}
	cl, _ := c.rt.topo.(*cluster)
	return cl
}

// Timer returns the timing wheel the Client uses (the one given in Config, or its own): one wheel per library
// client, shared with rlock's watchdog. It is stopped by Close only if the Client created it.
func (c *Client) Timer() *timer.Timer { return c.tm }

// Close fails every pending command and subscription with ErrClosed, closes every connection, stops the event
// loops (and the Client's own timer), and waits for every goroutine the Client started to exit. It blocks until
// then (connection attempts and topology queries in progress are cancelled). Later calls do nothing and return
// nil. Safe for concurrent use; it must not be called from a future callback or a pub/sub handler (they run on the
// event loop it stops).
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.cancel()
		if c.reg != nil {
			c.reg.close()
		}
		if c.node != nil {
			c.node.close(nil)
		}
		if c.rt != nil {
			c.rt.close()
		}
		c.wg.Wait()
		if c.rt != nil {
			c.rt.settleRetries() // retries scheduled by connections that failed during the wait
		}
		if c.eng != nil {
			err = c.eng.stop()
		}
		if c.ownTimer {
			_, _ = c.tm.Stop()
		}
	})
	return err
}

// unavailable is the error of a command that found no usable connection on n.
func (c *Client) unavailable(n *node) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if n == nil {
		if c.rt != nil {
			return c.rt.topo.noNode()
		}
		return unavailableError("", "connect", errors.New("no cluster node known"))
	}
	return n.pool.unavailable()
}

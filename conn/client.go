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

// Cmd is one command of a Pipeline: a script run with EVALSHA (Script non-nil, with Keys and Args), or a plain
// command made of Args (the name first).
type Cmd struct {
	Script *Script  // nil: a plain command made of Args
	Keys   []string // script keys (also the routing keys for cluster, later)
	Args   []string
}

// Client is the connection to one Redis deployment (today: a standalone server): a pool of auto-pipelined
// connections on gnet event loops (or crypto/tls connections for rediss://), a dedicated pub/sub connection, and a
// timing wheel. All its methods are safe for concurrent use. See the package documentation for the design.
type Client struct {
	cfg      Config
	eng      *engine // nil over TLS
	tm       *timer.Timer
	ownTimer bool

	ctx    context.Context // cancelled by Close: aborts connection attempts
	cancel context.CancelFunc
	wg     sync.WaitGroup // dial goroutines and stream reader/writer goroutines

	closed    atomic.Bool
	closeOnce sync.Once

	node *node // the standalone topology: one node
}

// New validates cfg, starts the event loops and dials the pool. It blocks until every connection of the pool has
// connected or failed (each bounded by DialTimeout) and returns an error if none connected (matching ErrUnavailable,
// wrapping the cause: refused, timeout, AUTH failure...). Connections that failed while others succeeded are retried
// in the background. Close the Client when done.
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
	c.node = newNode(c, cfg.Addr)

	var dials sync.WaitGroup
	for _, s := range c.node.pool.all {
		s.mu.Lock()
		pc := newPconn(s.addr, &c.cfg, s, nil, c.tm)
		s.cur.Store(pc)
		s.mu.Unlock()
		dials.Add(1)
		go func() { // owner: New, which waits for it just below
			defer dials.Done()
			s.dial(pc)
		}()
	}
	dials.Wait()
	if c.node.pool.pick() == nil {
		err := c.node.pool.unavailable()
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
// connection and written with whatever else is queued there. Safe for concurrent use.
func (c *Client) Do(ctx context.Context, args ...string) *future.Future[resp.Value] {
	if len(args) == 0 {
		return future.Completed(resp.Value{}, ErrEmptyCommand)
	}
	return c.do(ctx, nil, nil, args)
}

// Eval runs s with EVALSHA (keys, then args) and returns its future without blocking; see Do for the future and the
// context. On a NOSCRIPT reply the connection sends SCRIPT LOAD and the same EVALSHA again before completing the
// future: the caller never sees NOSCRIPT (unless the script keeps vanishing). keys and args are encoded before Eval
// returns and not kept. Safe for concurrent use.
func (c *Client) Eval(ctx context.Context, s *Script, keys []string, args ...string) *future.Future[resp.Value] {
	if s == nil {
		return future.Completed(resp.Value{}, ErrEmptyCommand)
	}
	return c.do(ctx, s, keys, args)
}

// do queues one command. keys and args are encoded before do returns and never stored anywhere, so they do not
// escape and a caller's variadic arguments stay on its stack: one allocation per command, the promise. (The script
// travels separately from them for the same reason: escape analysis is field-insensitive, so storing a pointer
// loaded from a struct would leak the struct's slices too.)
func (c *Client) do(ctx context.Context, s *Script, keys, args []string) *future.Future[resp.Value] {
	if err := ctx.Err(); err != nil {
		return future.Completed(resp.Value{}, err)
	}
	if c.closed.Load() {
		return future.Completed(resp.Value{}, ErrClosed)
	}
	n := c.route(keys)
	p := future.NewPromise[resp.Value]()
	stop := afterCancel(ctx, p)
	// A connection picked may close before send locks it: pick again (its replacement, or none).
	for range len(n.pool.all) + 1 {
		pc := n.pool.pick()
		if pc == nil {
			break
		}
		if err := pc.send(p, s, keys, args, stop); err == nil {
			return p.Future()
		}
	}
	if stop != nil {
		stop()
	}
	p.Fail(c.unavailable(n))
	return p.Future()
}

// Pipeline sends cmds on one connection, contiguous and in order, in one write (so that, say, a release and the
// next waiter's acquire reach the server back to back), and returns one future per command, completed as Do's. It
// does not block; ctx bounds every command as in Do. If a command is empty, every future fails with
// ErrEmptyCommand and nothing is sent. (Commands re-sent after NOSCRIPT go to the end of the connection's queue.)
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
	n := c.route(cmds[0].Keys)
	ps := make([]*future.Promise[resp.Value], len(cmds))
	for i := range ps {
		ps[i] = future.NewPromise[resp.Value]()
		futs[i] = ps[i].Future()
	}
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() {
			for _, p := range ps {
				p.Fail(ctx.Err())
			}
		})
	}
	for range len(n.pool.all) + 1 {
		pc := n.pool.pick()
		if pc == nil {
			break
		}
		if err := pc.sendBatch(ps, cmds, stop); err == nil {
			return futs
		}
	}
	if stop != nil {
		stop()
	}
	err := c.unavailable(n)
	for _, p := range ps {
		p.Fail(err)
	}
	return futs
}

// Subscribe subscribes h to channel on the server's dedicated pub/sub connection and returns a future of the
// Subscription, without blocking. The future completes once the server confirmed the subscription (at once if the
// channel is already subscribed by another handler: a second subscriber sends nothing), so a caller can subscribe
// before retrying an operation and miss no message published after that. It fails with a *ConnError matching
// ErrUnavailable when the pub/sub connection is down, and with ErrClosed after Close. After a reconnect every
// channel is subscribed again and its handlers receive KindResubscribed. h runs on the event loop and must not
// block. Safe for concurrent use.
func (c *Client) Subscribe(channel string, h Handler) *future.Future[*Subscription] {
	if c.closed.Load() {
		return future.Completed[*Subscription](nil, ErrClosed)
	}
	ps := c.node.pubsub(c)
	if ps == nil {
		return future.Completed[*Subscription](nil, ErrClosed)
	}
	return ps.subscribe(channel, h)
}

// Timer returns the timing wheel the Client uses (the one given in Config, or its own): one wheel per library
// client, shared with rlock's watchdog. It is stopped by Close only if the Client created it.
func (c *Client) Timer() *timer.Timer { return c.tm }

// Close fails every pending command and subscription with ErrClosed, closes every connection, stops the event
// loops (and the Client's own timer), and waits for every goroutine the Client started to exit. It blocks until
// then (connection attempts in progress are cancelled). Later calls do nothing and return nil. Safe for concurrent
// use; it must not be called from a future callback or a pub/sub handler (they run on the event loop it stops).
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.cancel()
		c.node.close()
		c.wg.Wait()
		if c.eng != nil {
			err = c.eng.stop()
		}
		if c.ownTimer {
			_, _ = c.tm.Stop()
		}
	})
	return err
}

// route returns the node for a command on keys. Standalone: the one node. Cluster (later) hashes keys to a slot.
func (c *Client) route([]string) *node { return c.node }

// unavailable is the error of a command that found no usable connection.
func (c *Client) unavailable(n *node) error {
	if c.closed.Load() {
		return ErrClosed
	}
	return n.pool.unavailable()
}

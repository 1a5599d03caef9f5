package conn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/timer"
)

// switchChannel is the Sentinel channel announcing a completed failover: "<name> <old-ip> <old-port> <new-ip>
// <new-port>".
const switchChannel = "+switch-master"

// sentinel finds a Sentinel Client's master and keeps the Client's node on it: it asks the Sentinels at start, on
// every +switch-master, whenever a watcher reconnects (messages may have been missed), when the master's
// connections fail or answer READONLY, and periodically.
type sentinel struct {
	c        *Client
	name     string
	addrs    []string
	scfg     *Config // connections to the Sentinels: their credentials, no database
	ref      *refresher
	watchers []*watcher
	failing  atomic.Bool // the last refresh failed (its warning is logged once per outage)
}

// watcher keeps a subscription to +switch-master on one Sentinel, on its own pub/sub connection (a registry of its
// own: every watcher subscribes to the same channel name). A failed subscription is retried on the wheel.
type watcher struct {
	s     *sentinel
	reg   *registry
	ps    *pubsub
	retry *timer.Timeout // guarded by reg.mu
}

// startSentinel is New for a Sentinel Client: ask the Sentinels for the master (ROLE-checked), dial its pool, and
// subscribe to +switch-master on every Sentinel.
func (c *Client) startSentinel() error {
	s := &sentinel{c: c, name: c.cfg.MasterName, addrs: c.cfg.SentinelAddrs, scfg: c.cfg.sentinelConfig()}
	c.sentinel = s
	c.rt = &router{c: c, sentinel: s}
	s.ref = &refresher{c: c, run: s.refresh, period: c.cfg.TopologyRefreshInterval}
	c.reg = newRegistry(func(string) *pubsub { return c.node.pubsub(c, false) }, nil)

	addr, err := s.discover()
	if err != nil {
		return err
	}
	c.node = newNode(c, addr, &endpoint{cfg: &c.cfg, master: true, rt: c.rt})
	var dials sync.WaitGroup
	c.node.dialAll(&dials)
	dials.Wait()
	if c.node.pool.pick() == nil {
		return c.node.pool.unavailable()
	}
	sep := &endpoint{cfg: s.scfg}
	for _, a := range s.addrs {
		w := &watcher{s: s}
		w.reg = newRegistry(func(string) *pubsub { return w.ps }, nil)
		w.ps = newPubsub(c, w.reg, a, sep, false)
		s.watchers = append(s.watchers, w)
		w.subscribe()
	}
	s.ref.start()
	return nil
}

// discover asks each Sentinel in turn for the master's address and checks with ROLE that the server there is a
// master; it returns the first address that passes. Each question is bounded by DialTimeout; it blocks.
func (s *sentinel) discover() (string, error) {
	var errs []error
	for _, sa := range s.addrs {
		ctx, cancel := context.WithTimeout(s.c.ctx, s.c.cfg.DialTimeout)
		addr, err := s.ask(ctx, sa)
		if err == nil {
			_, err = query(ctx, &s.c.cfg, addr, true, []string{"PING"})
		}
		cancel()
		if err == nil {
			return addr, nil
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %w", sa, err))
		if s.c.ctx.Err() != nil {
			break
		}
	}
	return "", unavailableError("", "sentinel", errors.Join(append([]error{
		fmt.Errorf("no Sentinel gave a reachable master for %q", s.name)}, errs...)...))
}

// ask runs SENTINEL GET-MASTER-ADDR-BY-NAME on one Sentinel.
func (s *sentinel) ask(ctx context.Context, sentinelAddr string) (string, error) {
	vs, err := query(ctx, s.scfg, sentinelAddr, false, []string{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.name})
	if err != nil {
		return "", err
	}
	v := vs[0]
	switch {
	case v.Type == resp.ErrorReply:
		return "", v.Err()
	case v.Null:
		return "", fmt.Errorf("the Sentinel does not monitor a master named %q", s.name)
	case v.Type != resp.Array || len(v.Elems) != 2:
		return "", fmt.Errorf("unexpected reply %s", v.String())
	}
	return net.JoinHostPort(v.Elems[0].Str, v.Elems[1].Str), nil
}

// refresh is the refresher's run: ask the Sentinels, and move the node when the master changed.
func (s *sentinel) refresh() {
	addr, err := s.discover()
	if err != nil {
		if s.c.ctx.Err() == nil {
			// Expected during a failover (the Sentinels name the dead master until they promote a replica): warn
			// once per outage.
			level := slog.LevelDebug
			if s.failing.CompareAndSwap(false, true) {
				level = slog.LevelWarn
			}
			s.c.cfg.Logger.Log(s.c.ctx, level, "conn: asking the Sentinels for the master failed", "master", s.name,
				"error", err)
			s.ref.stillDegraded()
		}
		return
	}
	s.failing.Store(false)
	s.switchTo(addr, "sentinel query")
	if !s.c.node.up() {
		s.ref.stillDegraded()
		return
	}
	s.ref.healthy()
}

// switchTo moves the Client's node to the master at addr, if it is not there already.
func (s *sentinel) switchTo(addr, why string) {
	old := s.c.node.currentAddr()
	if s.c.node.retarget(addr) {
		s.c.cfg.Logger.Info("conn: master switched", "master", s.name, "from", old, "to", addr, "by", why)
		s.c.rt.kick() // retries waiting for the new master go now (queued on its connections until they open)
	}
}

// subscribe subscribes the watcher to +switch-master; on failure it retries after ReconnectMaxBackoff (the
// connection's own reconnection then has had time to succeed). Once confirmed, the pub/sub layer resubscribes it
// after every reconnection.
func (w *watcher) subscribe() {
	w.reg.subscribe(switchChannel, w.onMessage).OnComplete(func(_ *Subscription, err error) {
		if err == nil || errors.Is(err, ErrClosed) {
			return
		}
		w.reg.mu.Lock()
		defer w.reg.mu.Unlock()
		if w.reg.closed {
			return
		}
		if to, terr := w.s.c.tm.NewTimeout(w, w.s.c.cfg.ReconnectMaxBackoff); terr == nil {
			w.retry = to
		}
	})
}

// Run is the watcher's retry (timer.Task).
func (w *watcher) Run(t *timer.Timeout) {
	w.reg.mu.Lock()
	if w.retry != t || w.reg.closed {
		w.reg.mu.Unlock()
		return
	}
	w.retry = nil
	w.reg.mu.Unlock()
	w.subscribe()
}

// onMessage handles +switch-master (move to the new master at once; the handshake's ROLE check verifies it) and
// the watcher's resubscription (messages may have been missed: ask the Sentinels). It runs on the event loop.
func (w *watcher) onMessage(m Message) {
	if m.Kind == KindResubscribed {
		w.s.ref.trigger()
		return
	}
	f := strings.Fields(m.Payload)
	if len(f) != 5 || f[0] != w.s.name {
		return
	}
	w.s.switchTo(net.JoinHostPort(f[3], f[4]), "+switch-master")
}

// close stops the refreshes and the watchers.
func (s *sentinel) close() {
	s.ref.close()
	for _, w := range s.watchers {
		w.reg.close()
		w.reg.mu.Lock()
		if w.retry != nil {
			w.retry.Cancel()
			w.retry = nil
		}
		w.reg.mu.Unlock()
		w.ps.slot.close(nil)
	}
}

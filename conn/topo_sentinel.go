package conn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/timer"
)

// switchChannel is the Sentinel channel announcing a completed failover: "<name> <old-ip> <old-port> <new-ip>
// <new-port>".
const switchChannel = "+switch-master"

// promotedChannel is the Sentinel channel on which the Sentinel leading a failover announces that the replica it
// chose now reports role master ("slave <ip>:<port> <ip> <port> @ <name> <old-ip> <old-port>"). +switch-master
// comes only once the other replicas are reconfigured, about a second later in a graceful failover, and meanwhile
// the old master still accepts writes that the failover will drop: the Client moves on this message already.
const promotedChannel = "+promoted-slave"

// sentinel finds a Sentinel Client's master and keeps the Client's node on it: it asks the Sentinels at start, on
// every +switch-master, whenever a watcher reconnects (messages may have been missed), when the master's
// connections fail or answer READONLY, and periodically.
type sentinel struct {
	c        *Client
	node     *node // the master's: retargeted on a switch; set once by startSentinel
	name     string
	addrs    []string
	scfg     *Config // connections to the Sentinels: their credentials, no database
	ref      *refresher
	watchers []*watcher
	failing  atomic.Bool // the last refresh failed (its warning is logged once per outage)
	// moveMu orders the moves of the node: a Sentinel's announcement, and a refresh's answer, which must not undo
	// an announcement made while the refresh asked (see refresh). announced counts the announcements; guarded.
	moveMu    sync.Mutex
	announced uint64
}

// watcher keeps a subscription to +switch-master on one Sentinel, on its own pub/sub connection (a registry of its
// own: every watcher subscribes to the same channel name). A failed subscription is retried on the wheel.
type watcher struct {
	s     *sentinel
	reg   *registry
	ps    *pubsub
	retry *timer.Timeout  // guarded by reg.mu
	have  map[string]bool // channels subscribed; guarded by reg.mu
}

// startSentinel is New for a Sentinel Client: ask the Sentinels for the master (ROLE-checked), dial its pool, and
// subscribe to +switch-master on every Sentinel.
func (c *Client) startSentinel() error {
	s := &sentinel{c: c, name: c.cfg.MasterName, addrs: c.cfg.SentinelAddrs, scfg: c.cfg.sentinelConfig()}
	c.rt = newRouter(c, s)
	s.ref = &refresher{c: c, run: s.refresh, period: c.cfg.TopologyRefreshInterval}
	c.reg = newRegistry(func(string) *pubsub { return s.node.pubsub(c, false) }, nil)

	addr, err := s.discover()
	if err != nil && !c.cfg.LazyConnect {
		return err
	}
	// Lazily, without an answer from the Sentinels, the node waits without an address (and its commands fail
	// with err) until a refresh finds the master and retargets it.
	s.node = newNode(c, addr, &endpoint{cfg: &c.cfg, master: true, rt: c.rt})
	if err != nil {
		s.node.noAddress(err)
	} else if err := s.node.start(c.cfg.LazyConnect); err != nil {
		return err
	}
	sep := &endpoint{cfg: s.scfg, sentinel: true}
	for _, a := range s.addrs {
		w := &watcher{s: s, have: map[string]bool{}}
		w.reg = newRegistry(func(string) *pubsub { return w.ps }, nil)
		w.ps = newPubsub(c, w.reg, a, sep, false)
		s.watchers = append(s.watchers, w)
		w.subscribe()
	}
	s.ref.start()
	if addr == "" {
		s.ref.trigger()
	}
	return nil
}

// discover asks every Sentinel for the master's address and its configuration epoch, and returns the address with
// the highest epoch whose server passes the ROLE check (ties: the order of SentinelAddrs). Sentinels resolve
// conflicts the same way: after a failover, the Sentinel that led it names the promoted replica with a new epoch
// while the others still name the old master (which, in a graceful failover, still says master) until they hear of
// it; taking the first answer would move the Client back to the old master. The Sentinels are asked in parallel,
// each question bounded by DialTimeout; it blocks.
func (s *sentinel) discover() (string, error) {
	// Ask them all at once: one that does not answer costs DialTimeout, not DialTimeout per Sentinel after it.
	res := make([]sentinelAnswer, len(s.addrs))
	errAt := make([]error, len(s.addrs))
	var wg sync.WaitGroup
	for i, sa := range s.addrs {
		wg.Add(1)
		go func() { // owner: discover, which waits for it just below
			defer wg.Done()
			ctx, cancel := context.WithTimeout(s.c.ctx, s.c.cfg.DialTimeout)
			defer cancel()
			res[i], errAt[i] = s.ask(ctx, sa)
		}()
	}
	wg.Wait()
	var errs []error
	var answers []sentinelAnswer
	for i, err := range errAt {
		if err != nil {
			errs = append(errs, fmt.Errorf("sentinel %s: %w", s.addrs[i], err))
		} else {
			answers = append(answers, res[i])
		}
	}
	slices.SortStableFunc(answers, func(a, b sentinelAnswer) int { return cmp.Compare(b.epoch, a.epoch) })
	tried := map[string]bool{}
	for _, a := range answers {
		if tried[a.addr] {
			continue
		}
		tried[a.addr] = true
		ctx, cancel := context.WithTimeout(s.c.ctx, s.c.cfg.DialTimeout)
		_, err := query(ctx, &s.c.cfg, a.addr, true, []string{"PING"})
		cancel()
		if err == nil {
			return a.addr, nil
		}
		errs = append(errs, fmt.Errorf("master %s (epoch %d): %w", a.addr, a.epoch, err))
	}
	return "", unavailableError("", "sentinel", errors.Join(append([]error{
		fmt.Errorf("no Sentinel gave a reachable master for %q", s.name)}, errs...)...))
}

// sentinelAnswer is one Sentinel's view of the master.
type sentinelAnswer struct {
	addr  string
	epoch int64 // config-epoch from SENTINEL MASTER; -1 when unknown
}

// ask runs SENTINEL GET-MASTER-ADDR-BY-NAME and SENTINEL MASTER (for the config epoch) on one Sentinel.
func (s *sentinel) ask(ctx context.Context, sentinelAddr string) (sentinelAnswer, error) {
	vs, err := query(ctx, s.scfg, sentinelAddr, false, []string{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.name},
		[]string{"SENTINEL", "MASTER", s.name})
	if err != nil {
		return sentinelAnswer{}, err
	}
	v := vs[0]
	switch {
	case v.Type == resp.ErrorReply:
		return sentinelAnswer{}, v.Err()
	case v.Null:
		return sentinelAnswer{}, fmt.Errorf("the Sentinel does not monitor a master named %q", s.name)
	case v.Type != resp.Array || len(v.Elems) != 2:
		return sentinelAnswer{}, fmt.Errorf("unexpected reply %s", v.String())
	}
	a := sentinelAnswer{addr: net.JoinHostPort(v.Elems[0].Str, v.Elems[1].Str), epoch: -1}
	if m := vs[1]; m.Type == resp.Array {
		a.epoch = int64(intOf(pairs(&m)["config-epoch"]))
	}
	return a, nil
}

// refresh is the refresher's run: ask the Sentinels, and move the node when the master changed.
//
// An announcement (+promoted-slave, +switch-master) that arrives while the Sentinels are being asked wins: their
// answers may predate it — every Sentinel names the old master until the failover's leader promotes a replica,
// and in a graceful failover the old master still passes the ROLE check until it is reconfigured — and acting on
// them would move the Client back to the old master, then forward again at the next announcement. Such a
// refresh moves nothing and asks again.
func (s *sentinel) refresh() {
	s.moveMu.Lock()
	asked := s.announced
	s.moveMu.Unlock()
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
	if !s.moveTo(addr, "sentinel query", &asked) {
		s.ref.trigger() // an announcement came meanwhile: ask again (after the refresh gap)
		return
	}
	if !s.node.up() {
		s.ref.stillDegraded()
		return
	}
	s.ref.healthy()
}

// announce moves the Client's node to the master at addr on a Sentinel's announcement.
func (s *sentinel) announce(addr, why string) { s.moveTo(addr, why, nil) }

// moveTo moves the Client's node to the master at addr, if it is not there already. asked is nil for an
// announcement, which counts as one; for a refresh's answer it is the count of announcements when the refresh
// began, and the answer is dropped (false) when another came since.
func (s *sentinel) moveTo(addr, why string, asked *uint64) bool {
	s.moveMu.Lock()
	if asked == nil {
		s.announced++
	} else if *asked != s.announced {
		s.moveMu.Unlock()
		return false
	}
	old := s.node.currentAddr()
	moved := s.node.retarget(addr)
	s.moveMu.Unlock()
	if moved {
		s.c.cfg.Logger.Info("conn: master switched", "master", s.name, "from", old, "to", addr, "by", why)
		if old != "" { // not a lazy Client's first master
			s.c.emit(Event{Kind: EventFailover, Addr: addr, Prev: old})
		}
		s.c.rt.kick() // retries waiting for the new master go now (queued on its connections until they open)
	}
	return true
}

// subscribe subscribes the watcher to +switch-master and +promoted-slave (those not subscribed yet); on failure it
// retries after ReconnectMaxBackoff (the connection's own reconnection then has had time to succeed). Once
// confirmed, the pub/sub layer resubscribes them after every reconnection.
func (w *watcher) subscribe() {
	for _, ch := range []string{switchChannel, promotedChannel} {
		w.reg.mu.Lock()
		have := w.have[ch]
		w.reg.mu.Unlock()
		if have {
			continue
		}
		w.reg.subscribe(ch, w.onMessage).OnComplete(func(_ *Subscription, err error) {
			if errors.Is(err, ErrClosed) {
				return
			}
			w.reg.mu.Lock()
			defer w.reg.mu.Unlock()
			if err == nil {
				w.have[ch] = true
				return
			}
			if w.reg.closed || w.retry != nil {
				return
			}
			if to, terr := w.s.c.tm.NewTimeout(w, w.s.c.cfg.ReconnectMaxBackoff); terr == nil {
				w.retry = to
			}
		})
	}
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

// onMessage handles +switch-master and +promoted-slave of our master (move to the new master at once; the
// handshake's ROLE check verifies it) and the watcher's resubscription (messages may have been missed: ask the
// Sentinels). It runs on the event loop.
func (w *watcher) onMessage(m Message) {
	if m.Kind == KindResubscribed {
		w.s.ref.trigger()
		return
	}
	f := strings.Fields(m.Payload)
	switch m.Channel {
	case switchChannel:
		if len(f) == 5 && f[0] == w.s.name {
			w.s.announce(net.JoinHostPort(f[3], f[4]), switchChannel)
		}
	case promotedChannel:
		if len(f) == 8 && f[0] == "slave" && f[4] == "@" && f[5] == w.s.name {
			w.s.announce(net.JoinHostPort(f[2], f[3]), promotedChannel)
		}
	}
}

// routesBySlot is topology.routesBySlot: the master serves every key.
func (s *sentinel) routesBySlot() bool { return false }

// nodeFor is topology.nodeFor: the master's node, whatever the slot.
func (s *sentinel) nodeFor(int) *node { return s.node }

// noNode is topology.noNode: before the Sentinels named a master, commands wait for one.
func (s *sentinel) noNode() error {
	return unavailableError("", "connect", errors.New("no master known yet"))
}

// redirect is topology.redirect: a Sentinel-managed master does not redirect.
func (s *sentinel) redirect(int, string, bool) *node { return nil }

// requestRefresh is topology.requestRefresh: ask the Sentinels again.
func (s *sentinel) requestRefresh() { s.ref.trigger() }

// close stops the refreshes and the watchers, and closes the master's node.
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
		w.ps.keeper.close(nil)
	}
	if s.node != nil { // nil when New failed before finding the master
		s.node.close(nil)
	}
}

package conn

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locksmith-go/locksmith/timer"
)

// keeper keeps one connection to a server alive: it dials, and when the connection closes it dials again, at once
// after a connection that lived long enough, else after a jittered exponential backoff scheduled on the timer wheel
// (no goroutine sleeps). A pool has PoolSize keepers (and one for the latency lane); a node's pub/sub connection is
// one more.
type keeper struct {
	cl   *Client
	ep   *endpoint
	ps   *pubsub // non-nil for the pub/sub keeper
	lane bool    // the latency lane: a stream transport even without TLS

	cur atomic.Pointer[pconn] // the current connection (connecting, open, or closed while backing off)

	mu       sync.Mutex // guards the fields below
	addr     string     // where connections go; a Sentinel Client moves it (retarget)
	switched bool       // retarget closed the current connection: replace it at once
	closed   bool
	failures int       // consecutive failed attempts or short-lived connections
	wasUp    bool      // a connection of this keeper has been open: the next one is a reconnection (events)
	refusing bool      // the server refuses the connection (refused); logged at Error level once per episode
	openedAt time.Time // when the current connection opened
	retry    *timer.Timeout
	lastErr  error // why the last connection closed or attempt failed
}

var _ connOwner = (*keeper)(nil)

// connectLocked creates a connection in stateConnecting, makes it current, and starts its dial goroutine. Callers
// with a pub/sub keeper then call ps.resubscribe(pc) after unlocking.
func (s *keeper) connectLocked() *pconn {
	pc := s.newConnLocked()
	s.cl.wg.Add(1)
	go func() { // owner: the Client (wg); exits after this one attempt
		defer s.cl.wg.Done()
		s.dial(pc)
	}()
	return pc
}

// newConnLocked creates a connection in stateConnecting and makes it current; the caller dials it.
func (s *keeper) newConnLocked() *pconn {
	var rt rerouter
	if s.ps == nil {
		rt = s.ep.rt // pub/sub connections carry no caller commands
	}
	pc := newPconn(s.addr, s.ep.cfg, s, s.ps, s.cl.tm, rt)
	s.cur.Store(pc)
	return pc
}

// dial runs one connection attempt for pc: dial, handshake, transport. It blocks for at most DialTimeout (less if
// the Client closes); on failure pc fails its queued commands and the keeper schedules the next attempt.
func (s *keeper) dial(pc *pconn) {
	cfg := s.ep.cfg
	ctx, cancel := context.WithTimeout(s.cl.ctx, cfg.DialTimeout)
	d, op, err := dialConn(ctx, cfg, pc.addr, s.ep.master)
	cancel()
	if err != nil {
		pc.closed(op, err)
		return
	}
	var tr transport
	switch {
	case d.tc != nil:
		tr = startStream(d.tc, d.raw, pc, &s.cl.wg, false)
	case s.lane:
		tr = startStream(d.raw, d.raw, pc, &s.cl.wg, true)
	case s.ps != nil:
		// Pub/sub on Go's netpoller, not on the event loop: see "Pub/sub" in doc.go.
		tr = startStream(d.raw, d.raw, pc, &s.cl.wg, false)
	default:
		gt, err := s.cl.eng.enroll(d.raw, pc)
		if err != nil {
			pc.closed("enroll", err)
			return
		}
		tr = gt
	}
	s.mu.Lock()
	s.openedAt = time.Now()
	again := s.wasUp
	s.wasUp, s.refusing = true, false
	s.mu.Unlock()
	if !pc.open(tr) {
		tr.close() // the Client closed during the attempt
		return
	}
	s.cl.cfg.Logger.Debug("conn: connected", "addr", pc.addr, "pubsub", s.ps != nil)
	kind := EventConnected
	if again {
		kind = EventReconnected
	}
	s.cl.emit(Event{Kind: kind, Addr: pc.addr, Role: s.role()})
}

// connClosed is called once per connection when it closes (connOwner). A connection that lived at least
// ReconnectMaxBackoff is replaced at once; otherwise (a failed attempt, or a connection that keeps dropping) the
// next attempt waits backoff(failures).
func (s *keeper) connClosed(pc *pconn, wasOpen bool, err error) {
	if s.ps != nil {
		s.ps.dropped()
	}
	if wasOpen {
		// Told before the replacement starts (so EventLost precedes its EventReconnected), without s.mu held (the
		// hook may issue commands, which may read the keeper's last error).
		s.mu.Lock()
		current := !s.closed && s.cur.Load() == pc
		s.mu.Unlock()
		if current {
			s.cl.emit(Event{Kind: EventLost, Addr: pc.addr, Role: s.role(), Err: err})
		}
	}
	s.mu.Lock()
	if s.closed || s.cur.Load() != pc {
		s.mu.Unlock()
		return
	}
	s.lastErr = err
	if wasOpen && time.Since(s.openedAt) >= s.cl.cfg.ReconnectMaxBackoff {
		s.failures = 0
	}
	if !wasOpen && s.failures == 0 {
		s.failures = 1 // a failed attempt is never retried at once
	}
	delay := backoff(&s.cl.cfg, s.failures)
	s.failures++
	if refused(err) {
		// The server refused the credentials or the configuration: only someone fixing them can change that, so
		// ask again at the slowest pace rather than on the short backoff of a transient failure.
		delay = s.cl.cfg.ReconnectMaxBackoff
	}
	if s.switched {
		// retarget closed it to move to a new address: dial that at once.
		s.switched, s.failures, delay = false, 0, 0
	} else if s.ep.rt != nil {
		// A Sentinel or cluster node lost a connection: the topology may have changed.
		s.ep.rt.topologyChanged()
	}
	if refused(err) {
		level := slog.LevelDebug // loud once per episode, not at every attempt
		if !s.refusing {
			s.refusing, level = true, slog.LevelError
		}
		s.cl.cfg.Logger.Log(s.cl.ctx, level, "conn: the server refused the connection; fix the configuration or "+
			"the server's ACL", "addr", s.addr, "pubsub", s.ps != nil, "error", err, "retry_in", delay)
	} else {
		s.cl.cfg.Logger.Info("conn: connection closed; reconnecting", "addr", s.addr, "pubsub", s.ps != nil,
			"error", err, "delay", delay)
	}
	if delay == 0 {
		next := s.connectLocked()
		s.mu.Unlock()
		if s.ps != nil {
			s.ps.resubscribe(next)
		}
		return
	}
	to, terr := s.cl.tm.NewTimeout(s, delay)
	if terr != nil {
		// Only a stopped (shared) Timer refuses: nothing can schedule the attempt, so say so loudly.
		s.cl.cfg.Logger.Error("conn: cannot schedule a reconnection; the connection stays down", "addr", s.addr,
			"error", terr)
	}
	s.retry = to
	s.mu.Unlock()
}

// Run is the backoff timer's task (timer.Task): start the next attempt. It starts a goroutine and returns; it
// never blocks.
func (s *keeper) Run(t *timer.Timeout) {
	s.mu.Lock()
	if s.closed || s.retry != t {
		s.mu.Unlock()
		return
	}
	s.retry = nil
	next := s.connectLocked()
	s.mu.Unlock()
	if s.ps != nil {
		s.ps.resubscribe(next)
	}
}

// unavailable is the error of a command issued while the keeper has no usable connection.
func (s *keeper) unavailable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// close stops reconnecting and closes the current connection, failing its commands with ErrClosed (cause nil) or
// with a *ConnError matching ErrConnLost that wraps cause.
func (s *keeper) close(cause error) {
	s.mu.Lock()
	s.closed = true
	if s.retry != nil {
		s.retry.Cancel()
		s.retry = nil
	}
	s.mu.Unlock()
	pc := s.cur.Load()
	if pc == nil {
		return
	}
	if cause == nil {
		pc.shutdown()
		return
	}
	pc.abandon("removed", cause)
}

// retarget moves the keeper to addr: the current connection is closed (its in-flight commands fail with a *ConnError
// wrapping ErrMasterSwitched) and replaced at once by one to addr; a pending backoff is cut short.
func (s *keeper) retarget(addr string) {
	s.mu.Lock()
	if s.closed || s.addr == addr {
		s.mu.Unlock()
		return
	}
	s.addr = addr
	s.failures = 0
	if s.retry != nil || s.cur.Load() == nil {
		// Backing off, or never connected (a lazy Sentinel Client's first master): connect at once.
		if s.retry != nil {
			s.retry.Cancel()
			s.retry = nil
		}
		next := s.connectLocked()
		s.mu.Unlock()
		if s.ps != nil {
			s.ps.resubscribe(next)
		}
		return
	}
	pc := s.cur.Load()
	s.switched = true
	s.mu.Unlock()
	if pc != nil {
		pc.abandon("failover", ErrMasterSwitched)
	}
}

// currentAddr returns where the keeper's connections go.
func (s *keeper) currentAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// backoff returns the delay before attempt number failures+1: 0 for the first, then ReconnectMinBackoff doubling
// up to ReconnectMaxBackoff, each drawn uniformly from [d/2, d] so that many clients (or keepers) cut off at once do
// not reconnect in lock step.
func backoff(cfg *Config, failures int) time.Duration {
	if failures == 0 {
		return 0
	}
	d := cfg.ReconnectMaxBackoff
	if shift := failures - 1; shift < 30 && cfg.ReconnectMinBackoff<<shift < d {
		d = cfg.ReconnectMinBackoff << shift
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

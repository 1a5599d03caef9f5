package conn

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locksmith-go/locksmith/timer"
)

// slot keeps one connection to a server alive: it dials, and when the connection closes it dials again, at once
// after a connection that lived long enough, else after a jittered exponential backoff scheduled on the timer wheel
// (no goroutine sleeps). A pool has PoolSize slots; a node's pub/sub connection is one more.
type slot struct {
	cl   *Client
	addr string
	ps   *pubsub // non-nil for the pub/sub slot
	lane bool    // the latency lane: a stream transport even without TLS

	cur atomic.Pointer[pconn] // the current connection (connecting, open, or closed while backing off)

	mu       sync.Mutex // guards the fields below
	closed   bool
	failures int       // consecutive failed attempts or short-lived connections
	openedAt time.Time // when the current connection opened
	retry    *timer.Timeout
	lastErr  error // why the last connection closed or attempt failed
}

var _ connOwner = (*slot)(nil)

// connectLocked creates a connection in stateConnecting, makes it current, and starts its dial goroutine. Callers
// with a pub/sub slot then call ps.resubscribe(pc) after unlocking.
func (s *slot) connectLocked() *pconn {
	pc := newPconn(s.addr, &s.cl.cfg, s, s.ps, s.cl.tm)
	s.cur.Store(pc)
	s.cl.wg.Add(1)
	go func() { // owner: the Client (wg); exits after this one attempt
		defer s.cl.wg.Done()
		s.dial(pc)
	}()
	return pc
}

// dial runs one connection attempt for pc: dial, handshake, transport. It blocks for at most DialTimeout (less if
// the Client closes); on failure pc fails its queued commands and the slot schedules the next attempt.
func (s *slot) dial(pc *pconn) {
	cfg := &s.cl.cfg
	ctx, cancel := context.WithTimeout(s.cl.ctx, cfg.DialTimeout)
	d, op, err := dialConn(ctx, cfg)
	cancel()
	if err != nil {
		pc.closed(op, err)
		return
	}
	var tr transport
	switch {
	case d.tc != nil:
		tr = startStream(d.tc, d.raw, pc, &s.cl.wg)
	case s.lane:
		tr = startStream(d.raw, d.raw, pc, &s.cl.wg)
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
	s.mu.Unlock()
	if !pc.open(tr) {
		tr.close() // the Client closed during the attempt
		return
	}
	s.cl.cfg.Logger.Debug("conn: connected", "addr", s.addr, "pubsub", s.ps != nil)
}

// connClosed is called once per connection when it closes (connOwner). A connection that lived at least
// ReconnectMaxBackoff is replaced at once; otherwise (a failed attempt, or a connection that keeps dropping) the
// next attempt waits backoff(failures).
func (s *slot) connClosed(pc *pconn, wasOpen bool, err error) {
	if s.ps != nil {
		s.ps.dropped()
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
	s.cl.cfg.Logger.Info("conn: connection closed; reconnecting", "addr", s.addr, "pubsub", s.ps != nil,
		"error", err, "delay", delay)
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
func (s *slot) Run(t *timer.Timeout) {
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

// unavailable is the error of a command issued while the slot has no usable connection.
func (s *slot) unavailable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// close stops reconnecting and closes the current connection, failing its commands with ErrClosed.
func (s *slot) close() {
	s.mu.Lock()
	s.closed = true
	if s.retry != nil {
		s.retry.Cancel()
		s.retry = nil
	}
	s.mu.Unlock()
	if pc := s.cur.Load(); pc != nil {
		pc.shutdown()
	}
}

// backoff returns the delay before attempt number failures+1: 0 for the first, then ReconnectMinBackoff doubling
// up to ReconnectMaxBackoff, each drawn uniformly from [d/2, d] so that many clients (or slots) cut off at once do
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

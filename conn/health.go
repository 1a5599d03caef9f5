package conn

import (
	"time"

	"github.com/locksmith-go/locksmith/timer"
)

// healthState is the periodic check's memory between runs. Guarded by pconn.mu.
//
// Why one periodic check per connection instead of a timeout per command: a timer.Timeout per command would be a
// second allocation per command plus two wheel operations; replies come back in FIFO order, so "no reply for
// ResponseTimeout while commands await one" is the same as "the reply counter did not move while the fifo held
// written commands", which the check reads from two counters. It fires between ResponseTimeout and
// ResponseTimeout + interval after the oldest reply became due.
type healthState struct {
	lastReplies uint64        // pconn.replies at the previous run
	wasAwaiting bool          // written commands awaited replies at the previous run
	stuck       time.Duration // time without a reply while commands awaited one
	idle        time.Duration // time without any command
}

// checkInterval is the period of the health check: a quarter of the shorter of ResponseTimeout and PingInterval,
// at least 5 ms and at most 1 s.
func checkInterval(cfg *Config) time.Duration {
	d := cfg.ResponseTimeout
	if cfg.PingInterval > 0 && cfg.PingInterval < d {
		d = cfg.PingInterval
	}
	d /= 4
	return min(max(d, 5*time.Millisecond), time.Second)
}

// scheduleCheckLocked arms the next health check.
func (pc *pconn) scheduleCheckLocked() {
	if pc.tm == nil || pc.state != stateOpen {
		return
	}
	to, err := pc.tm.NewTimeout(pc, checkInterval(pc.cfg))
	if err != nil {
		// The timer was stopped: the Client is closing.
		return
	}
	pc.check = to
}

// Run is the health check (timer.Task), on the timer's worker: it resets the connection when replies stopped
// coming for ResponseTimeout, sends a PING after PingInterval of idleness, and re-arms itself. It never blocks.
func (pc *pconn) Run(_ *timer.Timeout) {
	iv := checkInterval(pc.cfg)
	pc.mu.Lock()
	if pc.state != stateOpen {
		pc.mu.Unlock()
		return
	}
	h := &pc.health
	replies := pc.replies.Load()
	progressed := replies != h.lastReplies
	h.lastReplies = replies
	awaiting := pc.q.n-pc.unsent > 0
	if awaiting && h.wasAwaiting && !progressed {
		if pc.lane != nil {
			// Maybe nobody reads: a reply whose future nobody waits for (see laneReader).
			pc.lane.fallback()
		}
		h.stuck += iv
	} else {
		h.stuck = 0
	}
	h.wasAwaiting = awaiting
	if progressed || pc.q.n > 0 {
		h.idle = 0
	} else {
		h.idle += iv
	}
	if h.stuck >= pc.cfg.ResponseTimeout {
		pc.check = nil
		pc.mu.Unlock()
		pc.cfg.Logger.Warn("conn: no reply within the response timeout; resetting the connection",
			"addr", pc.addr, "timeout", pc.cfg.ResponseTimeout)
		pc.reset("timeout", ErrTimeout)
		return
	}
	var bell *doorbell
	if pc.cfg.PingInterval > 0 && h.idle >= pc.cfg.PingInterval {
		h.idle = 0
		pc.out = appendPing(pc.out)
		pc.pushLocked(pending{kind: kindPing})
		bell = pc.flushLocked()
	}
	pc.scheduleCheckLocked()
	pc.mu.Unlock()
	bell.sound()
}

// appendPing encodes PING.
func appendPing(dst []byte) []byte {
	return append(dst, "*1\r\n$4\r\nPING\r\n"...)
}

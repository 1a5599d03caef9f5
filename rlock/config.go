package rlock

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/conn"
)

// Defaults applied by NewClient to zero Config fields.
const (
	// DefaultWatchdogTimeout is the lease of a lock taken without an explicit lease (Redisson's
	// lockWatchdogTimeout): the watchdog renews it every third of it while the lock is held.
	DefaultWatchdogTimeout = 30 * time.Second

	// DefaultRenewBatchSize is the most renewals sent in one EVALSHA (Redisson renews up to 100 locks per call).
	DefaultRenewBatchSize = 100

	// DefaultRetryAttempts is how many times a command that failed on the transport is sent again, when sending it
	// again is safe: it was never sent (conn.ErrUnavailable), or it is read-only or retry-safe (the conditional
	// release and hand-off, renewals). Redisson's retryAttempts default is also 3.
	DefaultRetryAttempts = 3

	// DefaultRetryDelay is the pause before such a retry, on the client's timer. Shorter than Redisson's 1.5 s
	// because a retry is only made after conn reported the failure, which already took a response timeout or a
	// failed connection attempt.
	DefaultRetryDelay = 200 * time.Millisecond

	// MinLease is the shortest lease (and watchdog timeout) accepted: Redis expires keys in whole milliseconds.
	MinLease = time.Millisecond
)

// Config configures a Client. The zero value plus Conn.Addr is a working configuration: NewClient applies the
// Default* constants to every zero field.
type Config struct {
	// Conn configures the transport: address, authentication, TLS, pool size, response timeout. See conn.Config.
	Conn conn.Config

	// WatchdogTimeout is the lease of locks taken without an explicit lease. The watchdog renews each such lock
	// every WatchdogTimeout/3 (coalesced into batches) while it is held, so a process that dies frees its locks
	// within WatchdogTimeout. At least MinLease. Default DefaultWatchdogTimeout.
	WatchdogTimeout time.Duration

	// RenewBatchSize is the most locks renewed by one EVALSHA. Default DefaultRenewBatchSize.
	RenewBatchSize int

	// RetryAttempts is how many times a command that failed on the transport is retried, when that is safe (see
	// DefaultRetryAttempts). 0 takes the default; negative disables retries.
	RetryAttempts int

	// RetryDelay is the pause before each retry. Default DefaultRetryDelay.
	RetryDelay time.Duration

	// Logger receives warnings: locks lost or expired, renewal batches that failed, releases that failed in the
	// background. Nil discards them (the held contexts report every loss). It is also given to conn when
	// Conn.Logger is nil.
	Logger *slog.Logger

	// Observer receives lock events (acquired, released, renewal batches, lost) for metrics. Nil reports nothing.
	// Its methods run on the client's event loop and timer goroutines and must not block.
	Observer Observer
}

// resolved is a Config with defaults applied and derived values computed once.
type resolved struct {
	Config
	watchdogMillis string        // WatchdogTimeout as a script argument
	renewEvery     time.Duration // WatchdogTimeout / 3
	flushDelay     time.Duration // how long a partial renewal batch may wait for more renewals
}

// withDefaults validates c and applies the defaults. Errors are *ArgumentError.
func (c Config) withDefaults() (resolved, error) {
	if c.WatchdogTimeout == 0 {
		c.WatchdogTimeout = DefaultWatchdogTimeout
	}
	if c.WatchdogTimeout < MinLease {
		return resolved{}, &ArgumentError{Op: "NewClient", Arg: "WatchdogTimeout", Value: c.WatchdogTimeout.String(),
			Reason: "must be at least 1ms (0 takes the default of 30s)"}
	}
	if c.RenewBatchSize < 0 {
		return resolved{}, &ArgumentError{Op: "NewClient", Arg: "RenewBatchSize", Value: strconv.Itoa(c.RenewBatchSize),
			Reason: "must not be negative (0 takes the default of 100)"}
	}
	if c.RenewBatchSize == 0 {
		c.RenewBatchSize = DefaultRenewBatchSize
	}
	if c.RetryAttempts == 0 {
		c.RetryAttempts = DefaultRetryAttempts
	}
	if c.RetryAttempts < 0 {
		c.RetryAttempts = 0
	}
	if c.RetryDelay < 0 {
		return resolved{}, &ArgumentError{Op: "NewClient", Arg: "RetryDelay", Value: c.RetryDelay.String(),
			Reason: "must not be negative"}
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = DefaultRetryDelay
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	} else if c.Conn.Logger == nil {
		c.Conn.Logger = c.Logger
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	r := resolved{Config: c}
	r.watchdogMillis = strconv.FormatInt(c.WatchdogTimeout.Milliseconds(), 10)
	r.renewEvery = c.WatchdogTimeout / 3
	// A renewal may wait for its batch to fill for up to a thirtieth of the lease (100 ms at 3 s, 1 s at 30 s): it
	// is then still sent before 0.37 of the lease has passed, and batches stay full (issue 5, W3: 10,000 locks at
	// 3 s must cost at most 100 EVALSHA/s, which only full batches of 100 achieve).
	r.flushDelay = min(max(c.WatchdogTimeout/30, time.Millisecond), time.Second)
	return r, nil
}

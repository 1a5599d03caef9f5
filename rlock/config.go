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

	// DefaultSyncTimeout bounds the replicas' acknowledgement of a grant when Config.SyncReplicas is set (Redis
	// WAIT's timeout). Replicas with a healthy link acknowledge within a round trip (about a millisecond on a LAN:
	// the master asks them with REPLCONF GETACK as soon as a client waits); the bound only matters when a replica
	// is slow or gone, and then every command pipelined behind the WAIT on its connection waits as long, so it is
	// kept well below Redisson's slavesSyncTimeout (1 s) and conn's response timeout.
	DefaultSyncTimeout = 200 * time.Millisecond
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
	// background; and, at Error, panics the client recovered from callers' callbacks and Observer methods. Nil
	// discards them (the held contexts report every loss). It is also given to conn when Conn.Logger is nil.
	Logger *slog.Logger

	// Observer receives lock events for metrics and tracing: acquired, acquire failed, released, renewal
	// batches, lost, the transport's connection events (after Conn.OnEvent, which it does not replace) and a
	// refused publish. Nil reports nothing. Its methods run on the client's event loop and timer goroutines and
	// must not block. An Observer costs each acquire a few allocations (its end is watched so that a failure is
	// reported however it comes); nil costs nothing. See the adapters named in Observer's documentation.
	Observer Observer

	// SyncReplicas, when positive, makes every acquire of every lock kind (plain, fair, fenced, read and write
	// locks, and so the locks of a MultiLock or RedLock) wait until at least this many replicas of the lock's
	// master acknowledged the grant: the acquire script and a WAIT go out together (conn.Client.SendAndWait), as
	// Redisson's checkLockSyncedSlaves. A grant that fewer replicas acknowledged within SyncTimeout is released
	// again and the acquire retried (up to RetryAttempts times, after RetryDelay, within the call's wait); when no
	// retry is left the call fails with a *ReplicationError (ErrNotReplicated). A server or proxy without WAIT is
	// detected once (one log line from conn) and the check is then skipped. See "Replica-synced acquire" in the
	// package documentation for what it does and does not guarantee. 0 (the default) sends no WAIT. Set it to at
	// most the number of replicas each master has: a WAIT for more always runs out.
	SyncReplicas int

	// SyncTimeout bounds WAIT: how long a grant may wait for SyncReplicas acknowledgements. At least 1 ms and below
	// Conn.ResponseTimeout (WAIT holds its connection meanwhile). Default DefaultSyncTimeout when SyncReplicas is
	// set; setting it without SyncReplicas is an error.
	SyncTimeout time.Duration
}

// resolved is a Config with defaults applied and derived values computed once.
type resolved struct {
	Config
	watchdogMillis string        // WatchdogTimeout as a script argument
	renewEvery     time.Duration // WatchdogTimeout / 3
	flushDelay     time.Duration // how long a partial renewal batch may wait for more renewals
}

// checkSync validates SyncReplicas and SyncTimeout.
func (c Config) checkSync() error {
	responseTimeout := c.Conn.ResponseTimeout
	if responseTimeout == 0 {
		responseTimeout = conn.DefaultResponseTimeout
	}
	switch {
	case c.SyncReplicas < 0:
		return &ArgumentError{Op: "NewClient", Arg: "SyncReplicas", Value: strconv.Itoa(c.SyncReplicas),
			Reason: "must not be negative (0 sends no WAIT)"}
	case c.SyncReplicas == 0 && c.SyncTimeout != 0:
		return &ArgumentError{Op: "NewClient", Arg: "SyncTimeout", Value: c.SyncTimeout.String(),
			Reason: "is only used with SyncReplicas: set SyncReplicas too, or leave SyncTimeout at 0"}
	case c.SyncTimeout < 0 || (c.SyncTimeout > 0 && c.SyncTimeout < time.Millisecond):
		return &ArgumentError{Op: "NewClient", Arg: "SyncTimeout", Value: c.SyncTimeout.String(),
			Reason: "must be at least 1ms (0 takes the default of 200ms)"}
	case c.SyncTimeout >= responseTimeout || (c.SyncTimeout == 0 && c.SyncReplicas > 0 && DefaultSyncTimeout >= responseTimeout):
		return &ArgumentError{Op: "NewClient", Arg: "SyncTimeout", Value: c.SyncTimeout.String(),
			Reason: "must be below Conn.ResponseTimeout (" + responseTimeout.String() + "): WAIT holds its connection until it ends"}
	}
	return nil
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
	if err := c.checkSync(); err != nil {
		return resolved{}, err
	}
	if c.SyncReplicas > 0 && c.SyncTimeout == 0 {
		c.SyncTimeout = DefaultSyncTimeout
	}
	r := resolved{Config: c}
	r.watchdogMillis = strconv.FormatInt(c.WatchdogTimeout.Milliseconds(), 10)
	r.renewEvery = c.WatchdogTimeout / 3
	// A renewal may wait for its batch to fill for up to a thirtieth of the lease (100 ms at 3 s, 1 s at 30 s): it
	// is then still sent before 0.37 of the lease has passed, and batches stay full (10,000 locks at a 3 s
	// watchdog must cost at most 100 EVALSHA/s, which only full batches of 100 achieve).
	r.flushDelay = min(max(c.WatchdogTimeout/30, time.Millisecond), time.Second)
	return r, nil
}

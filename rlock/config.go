package rlock

import "time"

// Defaults applied by NewClient to zero Config fields.
const (
	// DefaultWatchdogTimeout is the lease of a lock taken without an explicit lease (Redisson's
	// lockWatchdogTimeout): the watchdog renews it every third of it while the lock is held.
	DefaultWatchdogTimeout = 30 * time.Second

	// DefaultRenewBatchSize is the most renewals sent in one EVALSHA (Redisson renews up to 100 locks per call).
	DefaultRenewBatchSize = 100
)

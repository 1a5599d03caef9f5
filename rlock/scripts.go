package rlock

import (
	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// The Lua scripts the package runs, as EVALSHA-ready values: SHA-1 computed once, NOSCRIPT handled by conn. Their
// sources and contracts (keys, arguments, replies) are in rlock/internal/scripts, one entry each in its table.
var (
	acquireScript       = newScript(&scripts.LockAcquire)
	releaseScript       = newScript(&scripts.LockRelease)
	leaveScript         = newScript(&scripts.LockLeave)
	deletePublishScript = newScript(&scripts.DeletePublish)
	renewScript         = newScript(&scripts.Renew)
	statusScript        = newScript(&scripts.Status)

	fencedAcquireScript = newScript(&scripts.FencedLockAcquire)

	fairAcquireScript     = newScript(&scripts.FairLockAcquire)
	fairReleaseScript     = newScript(&scripts.FairLockRelease)
	fairLeaveScript       = newScript(&scripts.FairLockLeave)
	fairForceUnlockScript = newScript(&scripts.FairLockForceUnlock)

	rwReadAcquireScript  = newScript(&scripts.ReadAcquire)
	rwWriteAcquireScript = newScript(&scripts.WriteAcquire)
	rwReadReleaseScript  = newScript(&scripts.ReadRelease)
	rwWriteReleaseScript = newScript(&scripts.WriteRelease)
	rwRenewScript        = newScript(&scripts.RWRenew)
	rwForceUnlockScript  = newScript(&scripts.RWForceUnlock)

	semAcquireScript = newScript(&scripts.SemaphoreAcquire)
	semReleaseScript = newScript(&scripts.SemaphoreRelease)
	semTrySetScript  = newScript(&scripts.SemaphoreTrySetPermits)
	semAddScript     = newScript(&scripts.SemaphoreAddPermits)
	semDrainScript   = newScript(&scripts.SemaphoreDrain)

	pesAcquireScript     = newScript(&scripts.PermitAcquire)
	pesReleaseScript     = newScript(&scripts.PermitRelease)
	pesUpdateLeaseScript = newScript(&scripts.PermitUpdateLease)
	pesAvailableScript   = newScript(&scripts.PermitAvailable)
	pesTrySetScript      = newScript(&scripts.PermitTrySetPermits)
	pesAddScript         = newScript(&scripts.PermitAddPermits)

	latchTrySetScript    = newScript(&scripts.LatchTrySetCount)
	latchCountDownScript = newScript(&scripts.LatchCountDown)

	rlAcquireScript   = newScript(&scripts.RateAcquire)
	rlAvailableScript = newScript(&scripts.RateAvailable)
	rlTrySetScript    = newScript(&scripts.RateTrySetRate)
	rlSetScript       = newScript(&scripts.RateSetRate)
	fixedWindowScript = newScript(&scripts.FixedWindow)
)

// sent maps every script of the table to the value the package sends, so that Scripts reports the very SHA-1s
// the package uses. Written during package initialisation only.
var sent = make(map[*scripts.Script]*conn.Script, len(scripts.All))

// newScript makes the conn.Script of s and records it in sent.
func newScript(s *scripts.Script) *conn.Script {
	cs := conn.NewScript(s.Source)
	sent[s] = cs
	return cs
}

// publishes reports whether s is a script that publishes, whose reply may report a refused message.
func publishes(s *conn.Script) bool { return scripts.Publishes(s.Source()) }

package scripts

import "strings"

// Script is one Lua script and its contract.
type Script struct {
	// Name identifies the script: "<kind>.<operation>", such as "lock.acquire".
	Name string
	// Source is the Lua source, byte for byte what SCRIPT LOAD receives.
	Source string
	// Keys describes KEYS[1], KEYS[2], ... in order ("KEYS[i]: ..." for a script taking any number).
	Keys []string
	// Args describes ARGV[1], ARGV[2], ... in order. A script that publishes (Publishes) takes the publish command
	// last (publishArg).
	Args []string
	// Reply describes what the script answers.
	Reply string
}

// Publishes reports whether the script whose source is src publishes: it then takes the publish command as its
// last argument, and when the server refuses one of its messages it answers with the refusal around its reply,
// {PublishRefusedMarker, {reply}, error, channel1, message1, ...} (see publishing).
func Publishes(src string) bool { return strings.HasPrefix(src, publishCommandLua) }

// All is every script, in a fixed order, the plain lock's acquire and release first: the table rlock.Scripts
// reports.
var All = []*Script{
	&LockAcquire, &LockRelease, &LockLeave, &DeletePublish, &Renew, &Status,
	&FencedLockAcquire,
	&FairLockAcquire, &FairLockRelease, &FairLockLeave, &FairLockForceUnlock,
	&ReadAcquire, &WriteAcquire, &ReadRelease, &WriteRelease, &RWForceUnlock, &RWRenew,
	&SemaphoreAcquire, &SemaphoreRelease, &SemaphoreTrySetPermits, &SemaphoreAddPermits, &SemaphoreDrain,
	&PermitAcquire, &PermitRelease, &PermitUpdateLease, &PermitAvailable, &PermitTrySetPermits, &PermitAddPermits,
	&LatchTrySetCount, &LatchCountDown,
	&RateAcquire, &RateAvailable, &RateTrySetRate, &RateSetRate, &FixedWindow,
}

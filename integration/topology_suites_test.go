package integration

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// The lock core and lock family suites in every topology: the same test functions that run on a
// standalone server of their own run again, as subtests, on a Sentinel-managed master with two replicas and on a
// six-node cluster — each also with every acquire waiting for replicas ("-sync"). Each topology is started once
// per suite and emptied before every test (deployment.reset).
//
// What runs is chosen by two environment variables:
//
//	LOCKSMITH_SUITES      ""     (default) the tests marked ci below, in the topologies marked ci
//	                      "full" every test below, in every topology
//	                      "off"  none (only the standalone run of each test)
//	LOCKSMITH_TOPOLOGIES  a comma-separated subset of sentinel, sentinel-sync, cluster, cluster-sync (default all)
//
// go test -short skips the suites. Tests left out are bound to one server: they restart, pause or kill it, kill
// a client's pub/sub connection, connect a child process or a raw Java-side socket to one address, or use several
// independent masters (RedLock), and have topology tests of their own (failover_test.go, cluster_lock_test.go).

// suiteTests are the portable tests; ci marks the representative subset the default run takes.
var suiteTests = []struct {
	name string
	run  func(*testing.T)
	ci   bool
}{
	// The lock core.
	{"TestLockUnlock", TestLockUnlock, true},
	{"TestReentrancyHoldCount", TestReentrancyHoldCount, true},
	{"TestIsLockedAndIsHeldBy", TestIsLockedAndIsHeldBy, false},
	{"TestUnlockByAnotherOwnerFails", TestUnlockByAnotherOwnerFails, false},
	{"TestForceUnlockFromFreshHandle", TestForceUnlockFromFreshHandle, true},
	{"TestRemainTimeToLive", TestRemainTimeToLive, false},
	{"TestInvalidArgumentsSendNothing", TestInvalidArgumentsSendNothing, false},
	{"TestContextEndIsNotFailureToAcquire", TestContextEndIsNotFailureToAcquire, false},
	{"TestCloseFailsWaitersAndLaterCalls", TestCloseFailsWaitersAndLaterCalls, false},
	{"TestSharedCounterSixteenClients", TestSharedCounterSixteenClients, true},
	{"TestCyclesLeaveNoSubscriptions", TestCyclesLeaveNoSubscriptions, true},
	{"TestTryUnlockChurnLeaksNothing", TestTryUnlockChurnLeaksNothing, false},
	{"TestHandoffIsExclusiveAndDoesNotStarveOthers", TestHandoffIsExclusiveAndDoesNotStarveOthers, false},
	{"TestLeaseExpiryLetsAnotherOwnerIn", TestLeaseExpiryLetsAnotherOwnerIn, false},
	{"TestTryLockWaitRunsOut", TestTryLockWaitRunsOut, false},
	{"TestClosedClientFreesLockWithinWatchdog", TestClosedClientFreesLockWithinWatchdog, false},
	{"TestWatchdogOutlivesTenTimeouts", TestWatchdogOutlivesTenTimeouts, false},
	{"TestNoRenewalAfterCancelledAcquire", TestNoRenewalAfterCancelledAcquire, true},
	{"TestLockStatus", TestLockStatus, true},
	{"TestAcquireOutcomesMixedStress", TestAcquireOutcomesMixedStress, false},

	// The lock family.
	{"TestFamilyRejectsBadInputWithTypedErrorsBeforeSendingAnything", TestFamilyRejectsBadInputWithTypedErrorsBeforeSendingAnything, true},
	{"TestFamilyReportsServerSideRefusalsWithTypedErrors", TestFamilyReportsServerSideRefusalsWithTypedErrors, false},
	{"TestSemaphoreWaiterFindsPermitsThatNoMessageAnnounced", TestSemaphoreWaiterFindsPermitsThatNoMessageAnnounced, false},
	{"TestLatchAwaiterNoticesAnOpeningThatNoMessageAnnounced", TestLatchAwaiterNoticesAnOpeningThatNoMessageAnnounced, false},
	{"TestLockWaiterFindsAReleaseThatNoMessageAnnounced", TestLockWaiterFindsAReleaseThatNoMessageAnnounced, false},
	{"TestFamilyCloseFailsWaitersAndEndsHeldLocks", TestFamilyCloseFailsWaitersAndEndsHeldLocks, false},
	{"TestFairLockGrantsEightWaitersInArrivalOrder", TestFairLockGrantsEightWaitersInArrivalOrder, true},
	{"TestFairLockFiveHundredWaitersAllAcquire", TestFairLockFiveHundredWaitersAllAcquire, false},
	{"TestFairLockTryWithoutWaitNeverQueues", TestFairLockTryWithoutWaitNeverQueues, false},
	{"TestFairLockAbandonedWaiterLeavesAtOnce", TestFairLockAbandonedWaiterLeavesAtOnce, false},
	{"TestFairLockKilledWaiterDelaysOthersByNoMoreThanItsWait", TestFairLockKilledWaiterDelaysOthersByNoMoreThanItsWait, false},
	{"TestFencedLockTokensIncreaseAcrossEveryAcquireKind", TestFencedLockTokensIncreaseAcrossEveryAcquireKind, false},
	{"TestFencedLockTokenLetsTheResourceRefuseAPausedFormerHolder", TestFencedLockTokenLetsTheResourceRefuseAPausedFormerHolder, false},
	{"TestFencedLockWaiterIsWokenByTheRelease", TestFencedLockWaiterIsWokenByTheRelease, true},
	{"TestCountDownLatchReleasesEveryAwaiterAtZero", TestCountDownLatchReleasesEveryAwaiterAtZero, true},
	{"TestCountDownLatchAwaitTimeoutAndDelete", TestCountDownLatchAwaitTimeoutAndDelete, false},
	{"TestMultiLockTakesAllOrNoneAndReleasesOnFailure", TestMultiLockTakesAllOrNoneAndReleasesOnFailure, true},
	{"TestMultiLocksInOppositeOrdersDoNotDeadlock", TestMultiLocksInOppositeOrdersDoNotDeadlock, false},
	{"TestMultiLockLosingOneLockCancelsIt", TestMultiLockLosingOneLockCancelsIt, false},
	{"TestRateLimiterSlidingWindow", TestRateLimiterSlidingWindow, false},
	{"TestRateLimiterNeverGrantsMoreThanTheRateInAnyWindow", TestRateLimiterNeverGrantsMoreThanTheRateInAnyWindow, false},
	{"TestRateLimiterPerClientRates", TestRateLimiterPerClientRates, true},
	{"TestFixedWindowLimiter", TestFixedWindowLimiter, false},
	{"TestRWLockIndependentReadLeasesExpireOnTime", TestRWLockIndependentReadLeasesExpireOnTime, false},
	{"TestRWLockWriterWaitsForEveryReader", TestRWLockWriterWaitsForEveryReader, false},
	{"TestRWLockTwentyReadersBlockedByAWriterAllProceedWhenItLeaves", TestRWLockTwentyReadersBlockedByAWriterAllProceedWhenItLeaves, true},
	{"TestRWLockDeadClientsReadLockExpiresAndLetsTheWriterIn", TestRWLockDeadClientsReadLockExpiresAndLetsTheWriterIn, false},
	{"TestRWLockReentersDowngradesAndRefusesUpgrade", TestRWLockReentersDowngradesAndRefusesUpgrade, true},
	{"TestRWLockWatchdogRenewsReaders", TestRWLockWatchdogRenewsReaders, false},
	{"TestRWLockInteroperatesWithARedissonLayoutWriter", TestRWLockInteroperatesWithARedissonLayoutWriter, false},
	{"TestSemaphorePermitsAreTakenReleasedAddedAndDrained", TestSemaphorePermitsAreTakenReleasedAddedAndDrained, false},
	{"TestSemaphoreWaiterIsWokenByARelease", TestSemaphoreWaiterIsWokenByARelease, true},
	{"TestSemaphoreNeverLetsMoreHoldersInThanPermits", TestSemaphoreNeverLetsMoreHoldersInThanPermits, false},
	{"TestSemaphoreAbandonedAcquireKeepsNoPermit", TestSemaphoreAbandonedAcquireKeepsNoPermit, false},
	{"TestPermitExpirableSemaphoreLeaseEndReturnsThePermit", TestPermitExpirableSemaphoreLeaseEndReturnsThePermit, false},
	{"TestPermitExpirableSemaphoreUpdateLeaseAndRelease", TestPermitExpirableSemaphoreUpdateLeaseAndRelease, true},
	{"TestPermitExpirableSemaphoreConcurrentHoldersStayWithinPermits", TestPermitExpirableSemaphoreConcurrentHoldersStayWithinPermits, false},
}

// suiteTopologies are the deployments the suites run on; ci marks those of the default run (cluster-sync adds
// little to the others in a short run: the cluster's routing, and WAIT, are each covered).
var suiteTopologies = []struct {
	name string
	ci   bool
}{
	{topoSentinel, true},
	{topoSentinelSync, true},
	{topoCluster, true},
	{topoClusterSync, false},
}

func TestSuites(t *testing.T) {
	mode := os.Getenv("LOCKSMITH_SUITES")
	switch {
	case testing.Short():
		t.Skip("-short: the topology suites need a replica set and a cluster")
	case mode == "off":
		t.Skip("LOCKSMITH_SUITES=off")
	case mode != "" && mode != "full":
		t.Fatalf("LOCKSMITH_SUITES=%q: want empty, full or off", mode)
	}
	full := mode == "full"
	var only []string
	if v := os.Getenv("LOCKSMITH_TOPOLOGIES"); v != "" {
		only = strings.Split(v, ",")
	}
	for _, topo := range suiteTopologies {
		if (!full && !topo.ci) || (only != nil && !slices.Contains(only, topo.name)) {
			continue
		}
		t.Run(topo.name, func(t *testing.T) { runSuite(t, topo.name, full) })
	}
}

// runSuite starts the topology and runs the suite's tests on it, one at a time.
func runSuite(t *testing.T, topo string, full bool) {
	shared = startDeployment(t, topo)
	defer func() { shared = nil }()
	for _, st := range suiteTests {
		if full || st.ci {
			t.Run(st.name, st.run)
		}
	}
}

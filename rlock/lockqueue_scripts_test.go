package rlock

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// The plain lock's queue of waiters, script by script, against a real server. ownerA and ownerB share a client
// UUID; ownerC is another client's.

const queueLease = 30 * time.Second

// queueAttempt is an attempt that queues the caller when refused: entry kind k ("g<ms>" or "w0"), its nonce the
// owner's id.
func queueAttempt(srv *scriptServer, name, owner, k string, claim bool) redistest.Reply {
	return srv.eval(scripts.LockAcquire, plainKeysOf(name), strconv.FormatInt(queueLease.Milliseconds(), 10), owner,
		specOf(k, claim, ""))
}

func leaveRaw(srv *scriptServer, name, owner, k string, claim bool) redistest.Reply {
	return srv.eval(scripts.LockLeave, plainKeysOf(name), "0", owner, specOf(k, claim, ""))
}

// specOf is the spec (see scripts.LockAcquire) of entry kind k with flag and nonce.
func specOf(k string, flag bool, nonce string) string {
	f := "0"
	if flag {
		f = "1"
	}
	return k + ":" + f + ":" + nonce
}

// entryOf is the queue entry scripts.LockAcquire builds for owner with kind k and no explicit nonce.
func entryOf(owner, k string) string {
	return k + ":" + owner[strings.LastIndexByte(owner, ':')+1:] + ":" + owner
}

func uuidOf(owner string) string { return owner[:strings.LastIndexByte(owner, ':')] }

func TestQueuedAttemptsAreServedFirstComeFirstServedAcrossClients(t *testing.T) {
	srv := newScriptServer(t)
	keys := plainKeysOf("lock")
	const g = "g10000"
	wantBulk(t, "A acquires", queueAttempt(srv, "lock", ownerA, g, false), "1")
	if n := srv.int("EXISTS", keys[keyQueue], keys[keyDeadlines]); n != 0 {
		t.Fatalf("an uncontended acquire made %d queue keys", n)
	}

	// C (another client) comes first, then B (A's client): C is the head, B behind it.
	if r := queueAttempt(srv, "lock", ownerC, g, false); r.Kind != redistest.KindInt || r.Int <= 0 {
		t.Fatalf("the head's refusal %s, want the lock's PTTL", r)
	}
	wantInt(t, "B queued behind C", queueAttempt(srv, "lock", ownerB, g, false), scripts.QueuedNotHead)
	if q := srv.strs("LRANGE", keys[keyQueue], "0", "-1"); len(q) != 2 || q[0] != entryOf(ownerC, g) || q[1] != entryOf(ownerB, g) {
		t.Fatalf("queue %q", q)
	}
	// An attempt again refreshes the entry, it does not queue it twice.
	wantInt(t, "B again", queueAttempt(srv, "lock", ownerB, g, true), scripts.QueuedNotHead)
	if n := srv.int("LLEN", keys[keyQueue]); n != 2 {
		t.Fatalf("queue length %d after a refresh", n)
	}

	grantsC := srv.subscribe(grantChannel("lock", uuidOf(ownerC)))
	unlocks := srv.subscribe(channelName("lock"))
	// A releases: C gets the lock in the same step, with its entry's lease, and is told on its client's channel.
	wantInt(t, "release to C", releaseRaw(t, srv, "lock", ownerA, 1, queueLease), 2)
	if m := srv.hash("lock"); len(m) != 1 || m[ownerC] != "1" {
		t.Fatalf("after the release: %v, want {%s: 1}", m, ownerC)
	}
	srv.wantPTTL("lock", 10*time.Second)
	if _, got := grantsC.message(); got != "g"+ownerC[strings.LastIndexByte(ownerC, ':')+1:] {
		t.Fatalf("C's client was told %q", got)
	}
	unlocks.quiet(channelName("lock")) // the lock was never free: nothing for other clients

	// C claims the grant its attempt finds (as after a lost message): counted once, not re-entered.
	wantBulk(t, "C claims", queueAttempt(srv, "lock", ownerC, g, true), "1")

	// C releases: B's client is the releasing one? No: C's. B is told on its own client's channel.
	grantsA := srv.subscribe(grantChannel("lock", uuidOf(ownerA)))
	wantInt(t, "release to B", releaseRaw(t, srv, "lock", ownerC, 1, queueLease), 2)
	if _, got := grantsA.message(); got != "g2" {
		t.Fatalf("B's client was told %q", got)
	}
	// B releases with nobody queued: deleted and published, the queue's keys gone.
	wantInt(t, "last release", releaseRaw(t, srv, "lock", ownerB, 1, queueLease), 1)
	if n := srv.int("EXISTS", "lock", keys[keyQueue], keys[keyDeadlines]); n != 0 {
		t.Fatalf("%d keys left after the last release", n)
	}
	if _, got := unlocks.message(); got != scripts.UnlockMessage {
		t.Fatalf("published %q", got)
	}
}

func TestReleaseToAWaiterOfTheSameClientAnswersItsNonce(t *testing.T) {
	srv := newScriptServer(t)
	grants := srv.subscribe(grantChannel("lock", uuidOf(ownerA)))
	queueAttempt(srv, "lock", ownerA, "g10000", false)
	queueAttempt(srv, "lock", ownerB, "g10000", false)
	wantBulk(t, "release", releaseRaw(t, srv, "lock", ownerA, 1, queueLease), "2") // B's nonce: its id
	grants.quiet(grantChannel("lock", uuidOf(ownerA)))                             // the reply said it
	if m := srv.hash("lock"); m[ownerB] != "1" {
		t.Fatalf("after the release: %v", m)
	}
}

// releaseNaming is a release of owner's single hold that names next, with spec, as the client's next waiter.
func releaseNaming(srv *scriptServer, name, owner, next, spec string) redistest.Reply {
	return srv.eval(scripts.LockRelease, plainKeysOf(name), owner, "1", strconv.FormatInt(queueLease.Milliseconds(), 10), next,
		spec)
}

func TestReleaseGrantsTheNamedNextWaiterWhenNobodyIsQueued(t *testing.T) {
	srv := newScriptServer(t)
	unlocks := srv.subscribe(channelName("lock"))
	wantBulk(t, "A takes it", acquireRaw(t, srv, "lock", ownerA, queueLease), "1")
	wantBulk(t, "release naming B", releaseNaming(srv, "lock", ownerA, ownerB, specOf("g10000", false, "")), "2")
	if m := srv.hash("lock"); len(m) != 1 || m[ownerB] != "1" {
		t.Fatalf("after the release: %v", m)
	}
	if ttl := srv.int("PTTL", "lock"); ttl <= 0 || ttl > 10000 {
		t.Fatalf("B's grant has PTTL %d, want its own lease of 10000 ms", ttl)
	}
	// A retry of the release that already ran reports the same grant, and changes nothing.
	wantBulk(t, "the release again", releaseNaming(srv, "lock", ownerA, ownerB, specOf("g10000", false, "")), "2")
	unlocks.quiet(channelName("lock")) // the lock was never free

	// A minted nonce is answered, and recorded for the grantee's claim.
	wantBulk(t, "B's release naming C", releaseNaming(srv, "lock", ownerB, ownerC, specOf("g10000", false, "77")),
		"77")
	if n := srv.int("ZSCORE", plainKeysOf("lock")[keyDeadlines], ":g:"+ownerC); n != 77 {
		t.Fatalf("the grant record of C scores %d, want its nonce 77", n)
	}
}

// A release naming a next waiter releases one hold as any release does: it grants nothing while holds remain, and
// changes nothing when the count it expects is not the owner's.
func TestReleaseNamingANextWaiterKeepsTheCountCondition(t *testing.T) {
	srv := newScriptServer(t)
	wantBulk(t, "A takes it", acquireRaw(t, srv, "lock", ownerA, queueLease), "1")
	wantBulk(t, "A re-enters", acquireRaw(t, srv, "lock", ownerA, queueLease), "2")
	next := func(expect string) redistest.Reply {
		return srv.eval(scripts.LockRelease, plainKeysOf("lock"), ownerA, expect,
			strconv.FormatInt(queueLease.Milliseconds(), 10), ownerB, specOf("g10000", false, ""))
	}
	wantInt(t, "expecting 1 of 2 holds", next("1"), -2)
	if m := srv.hash("lock"); len(m) != 1 || m[ownerA] != "2" {
		t.Fatalf("after a release expecting the wrong count: %v", m)
	}
	wantInt(t, "one of 2 holds", next("2"), 0)
	if m := srv.hash("lock"); len(m) != 1 || m[ownerA] != "1" {
		t.Fatalf("after releasing one of 2 holds: %v", m)
	}
	wantBulk(t, "the last hold", next("1"), "2")
	if m := srv.hash("lock"); len(m) != 1 || m[ownerB] != "1" {
		t.Fatalf("after the last hold's release: %v", m)
	}
}

func TestReleaseRefusesANextWaiterSpecThatDoesNotParse(t *testing.T) {
	srv := newScriptServer(t)
	wantBulk(t, "A takes it", acquireRaw(t, srv, "lock", ownerA, queueLease), "1")
	for _, spec := range []string{"", "g10000", "x10000:0:", "g10000:2:"} {
		if r := releaseNaming(srv, "lock", ownerA, ownerB, spec); r.Kind != redistest.KindError {
			t.Fatalf("spec %q: reply %s, want an error", spec, r)
		}
	}
	if m := srv.hash("lock"); len(m) != 1 || m[ownerA] != "1" {
		t.Fatalf("after the refused releases: %v", m)
	}
}

func TestChannelsAreDerivedFromTheQueueKeyForNamesWithAndWithoutBraces(t *testing.T) {
	srv := newScriptServer(t)
	for _, name := range []string{"plain", "{tag}:name"} {
		grants := srv.subscribe(grantChannel(name, uuidOf(ownerC)))
		unlocks := srv.subscribe(channelName(name))
		wantBulk(t, "A takes "+name, acquireRaw(t, srv, name, ownerA, queueLease), "1")
		wantIntIn(t, "C queues", queueAttempt(srv, name, ownerC, "g10000", false), 1, queueLease.Milliseconds())
		wantInt(t, "A releases to C", releaseRaw(t, srv, name, ownerA, 1, queueLease), 2)
		grants.want(grantChannel(name, uuidOf(ownerC)), "g"+ownerC[strings.LastIndexByte(ownerC, ':')+1:])
		wantInt(t, "C releases", releaseRaw(t, srv, name, ownerC, 1, queueLease), 1)
		unlocks.want(channelName(name), scripts.UnlockMessage)
	}
}

func TestAWaiterThatMustTakeTheLockItselfIsWokenNotGranted(t *testing.T) {
	srv := newScriptServer(t)
	keys := plainKeysOf("lock")
	grants := srv.subscribe(grantChannel("lock", uuidOf(ownerC)))
	queueAttempt(srv, "lock", ownerA, "g10000", false)
	queueAttempt(srv, "lock", ownerC, "w0", false)
	wantInt(t, "release", releaseRaw(t, srv, "lock", ownerA, 1, queueLease), 1)
	if _, got := grants.message(); got != "w7" {
		t.Fatalf("C's client was told %q, want w7", got)
	}
	if n := srv.int("EXISTS", "lock"); n != 0 {
		t.Fatal("a 'w' head was granted the lock")
	}
	// Somebody else's attempt on the free lock does not take it from the head: it wakes the head again.
	wantInt(t, "B refused", queueAttempt(srv, "lock", ownerB, "g10000", false), scripts.QueuedNotHead)
	if _, got := grants.message(); got != "w7" {
		t.Fatalf("C's client was told %q on B's attempt", got)
	}
	wantBulk(t, "C takes it", queueAttempt(srv, "lock", ownerC, "w0", true), "1")
	if q := srv.strs("LRANGE", keys[keyQueue], "0", "-1"); len(q) != 1 || q[0] != entryOf(ownerB, "g10000") {
		t.Fatalf("queue %q after C took the lock", q)
	}
}

func TestATryNeverQueuesAndNeverBargesPastTheQueue(t *testing.T) {
	srv := newScriptServer(t)
	keys := plainKeysOf("lock")
	queueAttempt(srv, "lock", ownerA, "g10000", false)
	queueAttempt(srv, "lock", ownerB, "g10000", false)
	r := acquireRaw(t, srv, "lock", ownerC, queueLease)
	if r.Kind != redistest.KindInt || r.Int <= 0 {
		t.Fatalf("a try on a held lock: %s", r)
	}
	if n := srv.int("LLEN", keys[keyQueue]); n != 1 {
		t.Fatalf("a try changed the queue to %d entries", n)
	}
	// The lock is freed by something that does not queue (a Redisson client's release, a force unlock): the next
	// attempt of anyone passes it to the head first.
	srv.do("DEL", "lock")
	if r := acquireRaw(t, srv, "lock", ownerC, queueLease); r.Kind != redistest.KindInt {
		t.Fatalf("a try with B queued on a free lock: %s, want a refusal", r)
	}
	if m := srv.hash("lock"); m[ownerB] != "1" {
		t.Fatalf("the free lock was not handed to the head: %v", m)
	}
}

func TestADeadWaiterIsDroppedWhenItsDeadlinePasses(t *testing.T) {
	srv := newScriptServer(t)
	keys := plainKeysOf("lock")
	queueAttempt(srv, "lock", ownerA, "g10000", false)
	queueAttempt(srv, "lock", ownerC, "g10000", false) // will die
	queueAttempt(srv, "lock", ownerB, "g10000", false)
	// C's deadline passes (its process died: no attempt refreshes it).
	srv.do("ZADD", keys[keyDeadlines], strconv.FormatInt(srv.millis()-1, 10), entryOf(ownerC, "g10000"))
	wantBulk(t, "release skips C", releaseRaw(t, srv, "lock", ownerA, 1, queueLease), "2")
	if m := srv.hash("lock"); m[ownerB] != "1" {
		t.Fatalf("after the release: %v", m)
	}
	if n := srv.int("EXISTS", keys[keyQueue]); n != 0 {
		t.Fatal("the queue is left after its last entry was served")
	}
	// The lock passed on without being free: the run of hand-overs goes on, in a set that expires if nothing
	// ends it.
	if m := srv.strs("ZRANGE", keys[keyDeadlines], "0", "-1"); len(m) != 1 || m[0] != ":chain" {
		t.Fatalf("deadline set %q, want the run's start only", m)
	}
	wantMarkerTTL(t, srv, "lock")
	wantInt(t, "B frees it", releaseRaw(t, srv, "lock", ownerB, 1, queueLease), 1)
	if n := srv.int("EXISTS", "lock", keys[keyQueue], keys[keyDeadlines]); n != 0 {
		t.Fatalf("%d keys left once the lock is free", n)
	}
}

// A first attempt that finds the lock and a queue joins the tail without looking at the head; the waiter learns
// that it is the head by its next attempt, which drops a dead head on the way.
func TestAFirstAttemptJoinsTheTailWithoutLookingAtTheHead(t *testing.T) {
	srv := newScriptServer(t)
	keys := plainKeysOf("lock")
	const g = "g10000"
	wantBulk(t, "A acquires", queueAttempt(srv, "lock", ownerA, g, false), "1")
	if r := queueAttempt(srv, "lock", ownerC, g, false); r.Kind != redistest.KindInt || r.Int <= 0 {
		t.Fatalf("the head's refusal %s, want the lock's PTTL", r)
	}
	// C dies: its deadline passes.
	srv.do("ZADD", keys[keyDeadlines], strconv.FormatInt(srv.millis()-1, 10), entryOf(ownerC, g))

	before := srv.millis()
	wantInt(t, "B's first attempt", queueAttempt(srv, "lock", ownerB, g, false), scripts.QueuedNotHead)
	if q := srv.strs("LRANGE", keys[keyQueue], "0", "-1"); len(q) != 2 || q[0] != entryOf(ownerC, g) || q[1] != entryOf(ownerB, g) {
		t.Fatalf("queue %q, want C's entry, then B's", q)
	}
	deadline, err := strconv.ParseInt(srv.str("ZSCORE", keys[keyDeadlines], entryOf(ownerB, g)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if live := scripts.QueueLiveness.Milliseconds(); deadline < before+live || deadline > srv.millis()+live {
		t.Fatalf("B's deadline %d, want the server's clock plus %d ms", deadline, live)
	}
	if ttl := srv.int("PTTL", keys[keyDeadlines]); ttl != -1 {
		t.Fatalf("the deadline set of a queue with entries expires (PTTL %d)", ttl)
	}

	// The same first attempt sent again (its reply was lost) finds its entry: it takes the queued path, which drops
	// C, tells B that it is the head, and queues nothing twice.
	grantsB := srv.subscribe(grantChannel("lock", uuidOf(ownerB)))
	if r := queueAttempt(srv, "lock", ownerB, g, false); r.Kind != redistest.KindInt || r.Int <= 0 {
		t.Fatalf("B's attempt again: %s, want the lock's PTTL (B is the head)", r)
	}
	if q := srv.strs("LRANGE", keys[keyQueue], "0", "-1"); len(q) != 1 || q[0] != entryOf(ownerB, g) {
		t.Fatalf("queue %q, want B's entry alone", q)
	}
	grantsB.want(grantChannel("lock", uuidOf(ownerB)), "w2")
	wantBulk(t, "release to B", releaseRaw(t, srv, "lock", ownerA, 1, queueLease), "2")
}

func TestLeavingTakesTheEntryOutAndGivesBackAGrant(t *testing.T) {
	srv := newScriptServer(t)
	keys := plainKeysOf("lock")
	queueAttempt(srv, "lock", ownerA, "g10000", false)
	queueAttempt(srv, "lock", ownerC, "g10000", false)
	queueAttempt(srv, "lock", ownerB, "g10000", false)
	wantInt(t, "C leaves", leaveRaw(srv, "lock", ownerC, "g10000", true), 1)
	wantInt(t, "C leaves again", leaveRaw(srv, "lock", ownerC, "g10000", true), 0)
	if q := srv.strs("LRANGE", keys[keyQueue], "0", "-1"); len(q) != 1 || q[0] != entryOf(ownerB, "g10000") {
		t.Fatalf("queue %q", q)
	}
	// B is granted by A's release, then leaves before it learned it: the grant is released, nobody holds it.
	releaseRaw(t, srv, "lock", ownerA, 1, queueLease)
	wantInt(t, "B leaves its grant", leaveRaw(srv, "lock", ownerB, "g10000", true), 2)
	if n := srv.int("EXISTS", "lock"); n != 0 {
		t.Fatal("a left grant still holds the lock")
	}
	// Without the claim flag (the owner may hold the lock through another client) a hold is left alone.
	queueAttempt(srv, "lock", ownerB, "g10000", false)
	wantInt(t, "B leaves, not claiming", leaveRaw(srv, "lock", ownerB, "g10000", false), 0)
	if m := srv.hash("lock"); m[ownerB] != "1" {
		t.Fatalf("a hold that was not claimed was released: %v", m)
	}
}

func TestALongRunOfHandOversLeavesAGapForClientsThatDoNotQueue(t *testing.T) {
	srv := newScriptServer(t)
	keys := plainKeysOf("lock")
	unlocks := srv.subscribe(channelName("lock"))
	queueAttempt(srv, "lock", ownerA, "g10000", false)
	queueAttempt(srv, "lock", ownerB, "g10000", false)
	queueAttempt(srv, "lock", ownerC, "g10000", false)
	releaseRaw(t, srv, "lock", ownerA, 1, queueLease) // to B: the run of hand-overs starts
	if srv.score(keys[keyDeadlines], ":chain") < 0 {
		t.Fatal("no run start recorded")
	}
	// The run has lasted past scripts.RunBound: B's release frees the lock for a gap and tells the unlock channel.
	before := srv.millis()
	wantGapAfterALongRun(t, srv, unlocks, ownerB)
	gapMillis := scripts.RunGap.Milliseconds()
	if end := srv.score(keys[keyDeadlines], ":gap"); end < before+gapMillis || end > srv.millis()+gapMillis {
		t.Fatalf("the gap ends at %d, want %d ms after the release (made between %d and now)", end, gapMillis, before)
	}
	// The gap is stretched so that what follows does not race with its few milliseconds on a slow machine.
	const stretched = 10000
	srv.do("ZADD", keys[keyDeadlines], strconv.FormatInt(srv.millis()+stretched, 10), ":gap")
	// During the gap the queue's head is refused (bounded by the gap) and a client that does not queue (a
	// Redisson client: create or re-enter, else PTTL) takes the lock.
	r := queueAttempt(srv, "lock", ownerC, "g10000", true)
	if r.Kind != redistest.KindInt || r.Int < stretched-1000 || r.Int > stretched {
		t.Fatalf("the head during the gap: %s, want the gap's remaining milliseconds", r)
	}
	redisson := `if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1) redis.call('pexpire', KEYS[1], ARGV[1]) return nil end
return redis.call('pttl', KEYS[1])`
	const javaOwner = "1b4e28ba-2fa1-11d2-883f-0016d3cca427:1"
	wantNil(t, "Redisson acquires in the gap", srv.eval(scripts.Script{Source: redisson}, []string{"lock"}, "30000", javaOwner))
	if r := queueAttempt(srv, "lock", ownerC, "g10000", true); r.Kind != redistest.KindInt || r.Int <= stretched {
		t.Fatalf("the head while Redisson holds: %s, want its PTTL", r)
	}
}

// Two clients taking turns empty the queue at every hand-over (the grantee was its only entry) and fill it again
// with the releaser's next attempt, while the lock never goes free: the run of hand-overs goes on across those, so
// that a client that does not queue still gets its gap.
func TestARunOfHandOversGoesOnWhileTheQueueEmptiesAndFillsAgain(t *testing.T) {
	srv := newScriptServer(t)
	keys := plainKeysOf("lock")
	unlocks := srv.subscribe(channelName("lock"))
	start := handOverToC(t, srv)
	if n := srv.int("EXISTS", keys[keyQueue]); n != 0 {
		t.Fatal("C's entry is still queued")
	}
	// A queues again while C holds: the queue was empty, the lock never free.
	if r := queueAttempt(srv, "lock", ownerA, "g10000", false); r.Kind != redistest.KindInt || r.Int <= 0 {
		t.Fatalf("A's refusal %s, want the lock's PTTL", r)
	}
	if got := srv.score(keys[keyDeadlines], ":chain"); got != start {
		t.Fatalf("the run's start is %d after the queue emptied and filled again, want %d", got, start)
	}
	unlocks.quiet(channelName("lock"))
	// The run has lasted past scripts.RunBound: C's release leaves the gap instead of handing the lock to A.
	wantGapAfterALongRun(t, srv, unlocks, ownerC)
}

// wantGapAfterALongRun makes the lock's run of hand-overs older than scripts.RunBound and checks that the release
// by holder then frees the lock for a gap and publishes the unlock message.
func wantGapAfterALongRun(t *testing.T, srv *scriptServer, unlocks *subscription, holder string) {
	t.Helper()
	srv.do("ZADD", plainKeysOf("lock")[keyDeadlines], strconv.FormatInt(srv.millis()-2000, 10), ":chain")
	wantInt(t, "release into a gap", releaseRaw(t, srv, "lock", holder, 1, queueLease), 1)
	if n := srv.int("EXISTS", "lock"); n != 0 {
		t.Fatal("the lock was handed over at the end of a long run")
	}
	if _, got := unlocks.message(); got != scripts.UnlockMessage {
		t.Fatalf("published %q", got)
	}
}

// handOverToC has A take the lock, queues C (then behind, in order, the owners of queuedBehind), and has A's
// release hand the lock to C, which starts a run of hand-overs; it returns the run's start.
func handOverToC(t *testing.T, srv *scriptServer, queuedBehind ...string) int64 {
	t.Helper()
	wantBulk(t, "A acquires", queueAttempt(srv, "lock", ownerA, "g10000", false), "1")
	for _, o := range append([]string{ownerC}, queuedBehind...) {
		queueAttempt(srv, "lock", o, "g10000", false)
	}
	wantInt(t, "A hands it to C", releaseRaw(t, srv, "lock", ownerA, 1, queueLease), 2)
	start := srv.score(plainKeysOf("lock")[keyDeadlines], ":chain")
	if start < 0 {
		t.Fatal("no run start recorded")
	}
	return start
}

// A run of hand-overs ends when the lock is free: a release that frees it removes the run's start, also when the
// queue is gone (the grantee was its last entry) and only the deadline set is left.
func TestAReleaseThatFreesTheLockEndsTheRunOfHandOvers(t *testing.T) {
	srv := newScriptServer(t)
	keys := plainKeysOf("lock")
	handOverToC(t, srv)
	wantInt(t, "C frees it", releaseRaw(t, srv, "lock", ownerC, 1, queueLease), 1)
	if n := srv.int("EXISTS", "lock", keys[keyQueue], keys[keyDeadlines]); n != 0 {
		t.Fatalf("%d keys left once the lock is free", n)
	}
	// A run that a script finds the lock free in (expired meanwhile) ends there too.
	handOverToC(t, srv, ownerB)
	srv.do("DEL", "lock") // C's lease ran out
	wantBulk(t, "B, now the head, takes the free lock", queueAttempt(srv, "lock", ownerB, "g10000", true), "1")
	if got := srv.score(keys[keyDeadlines], ":chain"); got >= 0 {
		t.Fatalf("the run's start %d survived a free lock", got)
	}
}

func TestAWaiterWhoseEntryIsGoneIsToldItWasQueuedAgain(t *testing.T) {
	srv := newScriptServer(t)
	keys := plainKeysOf("lock")
	const g = "g10000"
	wantBulk(t, "A acquires", queueAttempt(srv, "lock", ownerA, g, false), "1")
	wantIntIn(t, "C queued as the head", queueAttempt(srv, "lock", ownerC, g, false), 1, queueLease.Milliseconds())
	wantInt(t, "release to C", releaseRaw(t, srv, "lock", ownerA, 1, queueLease), 2)
	srv.do("DEL", "lock") // C's grant ran out unclaimed (its message came late)
	wantBulk(t, "A takes it again", queueAttempt(srv, "lock", ownerA, g, false), "1")

	// C's next attempt finds its entry gone: queued again as the head, and told so with A's PTTL as its bound.
	r := queueAttempt(srv, "lock", ownerC, g, true)
	if r.Kind != redistest.KindInt || r.Int > scripts.RequeuedHeadBase+2 {
		t.Fatalf("C's attempt after its grant ran out: %s, want a re-queued head's reply", r)
	}
	if bound := scripts.RequeuedHeadBase - r.Int; bound < queueLease.Milliseconds()-5000 || bound > queueLease.Milliseconds() {
		t.Fatalf("the re-queued head's bound is %d ms, want A's PTTL", bound)
	}
	// Its next refresh finds it queued: a plain refusal.
	wantIntIn(t, "C's refresh", queueAttempt(srv, "lock", ownerC, g, true), 1, queueLease.Milliseconds())

	// B, dropped from behind C (as a dead waiter is), is queued again behind it and told so.
	wantInt(t, "B queued behind C", queueAttempt(srv, "lock", ownerB, g, false), scripts.QueuedNotHead)
	srv.do("LREM", keys[keyQueue], "0", entryOf(ownerB, g))
	srv.do("ZREM", keys[keyDeadlines], entryOf(ownerB, g))
	wantInt(t, "B's refresh", queueAttempt(srv, "lock", ownerB, g, true), scripts.RequeuedNotHead)
	if q := srv.strs("LRANGE", keys[keyQueue], "0", "-1"); len(q) != 2 || q[1] != entryOf(ownerB, g) {
		t.Fatalf("queue %q, want B behind C", q)
	}
}

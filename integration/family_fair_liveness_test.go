package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// Fair-lock liveness: a free fair lock with waiters is taken by the next waiter within 250 ms of the previous
// holder's lease end (released or expired), and a waiter dropped from the server's queue by another client notices
// within a second and queues again. Redisson clients on the same lock are played with Redisson's fair-lock scripts
// run by EVAL, as a Java client runs them.

// fairHandoffBound is the requirement: how late after the previous holder's lease end the next waiter may take the
// lock.
const fairHandoffBound = 250 * time.Millisecond

// grant is one acquisition seen by a test goroutine: when its call returned, and its error.
type grant struct {
	at  time.Time
	err error
}

// A holds with a 1 s lease; B and C wait (TryLock with a 10 s wait; LockLease) with 1 s leases. Each gets the lock
// when the lease before it ends. (C used to wait for B's queue deadline, about 10 s, or, as a LockLease waiter,
// for a third of its liveness window, 100 s.)
func TestFairLockNextWaiterTakesItWhenTheLeaseEnds(t *testing.T) {
	srv := startServer(t)
	ca, cb, cc := newLockClient(t, srv, 0), newLockClient(t, srv, 0), newLockClient(t, srv, 0)
	ctx := ctxT(t, 30*time.Second)
	const lease = time.Second

	before := time.Now()
	if _, err := ca.FairLock("fl").TryLock(ctx, 0, lease); err != nil {
		t.Fatal(err)
	}
	aGranted := time.Now()
	gotB, gotC := make(chan grant, 1), make(chan grant, 1)
	go func() { // owner: this test; returns when B's TryLock does
		_, err := cb.FairLock("fl").TryLock(ctx, 10*time.Second, lease)
		gotB <- grant{time.Now(), err}
	}()
	eventually(t, 5*time.Second, "B queued", func() bool { return famQueueLen(t, srv, "fl") == 1 })
	go func() { // owner: this test; returns when C's LockLease does
		_, err := cc.FairLock("fl").LockLease(ctx, lease)
		gotC <- grant{time.Now(), err}
	}()
	eventually(t, 5*time.Second, "C queued", func() bool { return famQueueLen(t, srv, "fl") == 2 })

	b := <-gotB
	if b.err != nil {
		t.Fatalf("B: %v", b.err)
	}
	// A's lease ended on the server between before+1s and aGranted+1s.
	if b.at.Before(before.Add(lease)) || b.at.Sub(aGranted.Add(lease)) > fairHandoffBound {
		t.Fatalf("B took the lock %v after A's lease end, want within %v", b.at.Sub(aGranted.Add(lease)), fairHandoffBound)
	}
	c := <-gotC
	if c.err != nil {
		t.Fatalf("C: %v", c.err)
	}
	// B's lease ended by b.at+1s (its grant reply came after the server granted it).
	if late := c.at.Sub(b.at.Add(lease)); late > fairHandoffBound {
		t.Fatalf("C took the lock %v after B's lease end, want within %v", late, fairHandoffBound)
	}
	// b.at is when B's goroutine saw its grant, which a loaded machine may delay after the server's grant; the
	// margin leaves room for that.
	if c.at.Before(b.at.Add(lease - 300*time.Millisecond)) {
		t.Fatalf("C took the lock %v before B's lease could end", b.at.Add(lease).Sub(c.at))
	}
}

// Redisson's fair-lock scripts (RedissonFairLock.tryLockInnerAsync and unlockInnerAsync, Redisson 3.x), run with
// EVAL as a Java client would. ARGV of the acquire: lease, owner, thread wait time, the client's clock in ms; of
// the release: message, lease, owner, the client's clock.
const (
	redissonFairStale = `while true do
local firstThreadId2 = redis.call('lindex', KEYS[2], 0);
if firstThreadId2 == false then break; end;
local timeout = tonumber(redis.call('zscore', KEYS[3], firstThreadId2));
if timeout <= tonumber(ARGV[4]) then
redis.call('zrem', KEYS[3], firstThreadId2); redis.call('lpop', KEYS[2]);
else break; end;
end;
`
	redissonFairAcquire = redissonFairStale + `if (redis.call('exists', KEYS[1]) == 0) and ((redis.call('exists', KEYS[2]) == 0)
or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then
redis.call('lpop', KEYS[2]); redis.call('zrem', KEYS[3], ARGV[2]);
local keys = redis.call('zrange', KEYS[3], 0, -1);
for i = 1, #keys, 1 do redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]); end;
redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil;
end;
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil;
end;
local timeout = redis.call('zscore', KEYS[3], ARGV[2]);
if timeout ~= false then return timeout - tonumber(ARGV[3]) - tonumber(ARGV[4]); end;
local lastThreadId = redis.call('lindex', KEYS[2], -1);
local ttl;
if lastThreadId ~= false and lastThreadId ~= ARGV[2] then
ttl = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - tonumber(ARGV[4]);
else ttl = redis.call('pttl', KEYS[1]); end;
local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);
if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then redis.call('rpush', KEYS[2], ARGV[2]); end;
return ttl;`
	redissonFairRelease = redissonFairStale + `if (redis.call('exists', KEYS[1]) == 0) then
local nextThreadId = redis.call('lindex', KEYS[2], 0);
if nextThreadId ~= false then redis.call('publish', KEYS[4] .. ':' .. nextThreadId, ARGV[1]); end;
return 1; end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; end;
redis.call('del', KEYS[1]);
local nextThreadId = redis.call('lindex', KEYS[2], 0);
if nextThreadId ~= false then redis.call('publish', KEYS[4] .. ':' .. nextThreadId, ARGV[1]); end;
return 1;`
)

// redissonFair plays Redisson clients on the fair lock name, with thread wait time wait.
type redissonFair struct {
	t    *testing.T
	srv  server
	name string
	wait time.Duration
}

func (r redissonFair) keys() []string {
	return []string{"4", r.name, "redisson_lock_queue:{" + r.name + "}", "redisson_lock_timeout:{" + r.name + "}",
		"redisson_lock__channel:{" + r.name + "}"}
}

// javaClock is the clock the Redisson scripts are given, as a Java client passes System.currentTimeMillis(): a
// second ahead of this machine's. A Redisson acquire shifts our unbounded waiter's deadline (its last refresh plus
// its 5-minute liveness window) down by the Java thread wait time, also 5 minutes, to the instant of that refresh;
// Redisson then drops it only if its clock has passed that instant. Our waiter refreshes once more right after it
// queued (its retry once subscribed), which can land a millisecond after a clock read beforehand: the second
// makes the drop the tests arrange certain, as a Java client whose clock runs ahead would make it.
func javaClock() string { return strconv.FormatInt(time.Now().Add(time.Second).UnixMilli(), 10) }

// acquire runs Redisson's acquire for owner: true when granted.
func (r redissonFair) acquire(owner string, lease time.Duration) bool {
	r.t.Helper()
	args := append([]string{"EVAL", redissonFairAcquire}, r.keys()...)
	args = append(args, r.acquireStep(owner, lease).args...)
	v, err := r.srv.Do(context.Background(), args...)
	if err != nil {
		r.t.Fatalf("Redisson fair acquire by %s: %v", owner, err)
	}
	return v.Kind == redistest.KindNil
}

// javaStep is one Redisson script run inside atomically.
type javaStep struct {
	src  string
	args []string
}

func (r redissonFair) acquireStep(owner string, lease time.Duration) javaStep {
	return javaStep{redissonFairAcquire, []string{strconv.FormatInt(lease.Milliseconds(), 10), owner,
		strconv.FormatInt(r.wait.Milliseconds(), 10), javaClock()}}
}

func (r redissonFair) releaseStep(owner string) javaStep {
	return javaStep{redissonFairRelease, []string{"0", "30000", owner, javaClock()}}
}

// atomically runs Redisson scripts one after the other in one EVAL, so that no waiter of ours attempts between
// them (it would refresh the deadline a step shifts), and returns the queue they leave.
func (r redissonFair) atomically(steps ...javaStep) []string {
	r.t.Helper()
	var lua strings.Builder
	var argv []string
	for i, st := range steps {
		fmt.Fprintf(&lua, "local function step%d(KEYS, ARGV)\n%s\nend\n", i, st.src)
	}
	for i, st := range steps {
		refs := make([]string, len(st.args))
		for j := range st.args {
			refs[j] = fmt.Sprintf("ARGV[%d]", len(argv)+j+1)
		}
		fmt.Fprintf(&lua, "step%d(KEYS, {%s})\n", i, strings.Join(refs, ", "))
		argv = append(argv, st.args...)
	}
	lua.WriteString("return redis.call('lrange', KEYS[2], 0, -1)")
	args := append(append([]string{"EVAL", lua.String()}, r.keys()...), argv...)
	v, err := r.srv.Do(context.Background(), args...)
	if err != nil {
		r.t.Fatalf("Redisson scripts: %v", err)
	}
	q := []string{}
	for _, e := range v.Array {
		q = append(q, e.Str)
	}
	return q
}

func (r redissonFair) queue() []string {
	r.t.Helper()
	q, err := r.srv.DoStrings(context.Background(), "LRANGE", "redisson_lock_queue:{"+r.name+"}", "0", "-1")
	if err != nil {
		r.t.Fatal(err)
	}
	return q
}

const (
	javaHolder = "5b3e2a10-0000-4000-8000-00000000beef:1"
	javaWaiter = "5b3e2a10-0000-4000-8000-00000000beef:2"
)

// A Redisson client's acquire shifts every queued deadline down by its thread wait time (5 minutes by default) and
// its release drops waiters whose deadline passed, without telling them. Our waiter, dropped so while the lock is
// free, notices within a second and takes the lock (it used to sleep about 100 s).
func TestFairLockWaiterDroppedByRedissonQueuesAgain(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 30*time.Second)
	j := redissonFair{t: t, srv: srv, name: "flr", wait: 5 * time.Minute}

	if !j.acquire(javaHolder, 30*time.Second) {
		t.Fatal("the Java holder was refused a free lock")
	}
	if j.acquire(javaWaiter, 30*time.Second) {
		t.Fatal("the Java waiter was granted a held lock")
	}
	got := make(chan grant, 1)
	var owner string
	go func() { // owner: this test; returns when the waiter's Lock does
		held, err := c.FairLock("flr").Lock(ctx)
		if err == nil {
			owner, _ = rlock.OwnerOf(held)
		}
		got <- grant{time.Now(), err}
	}()
	eventually(t, 5*time.Second, "our waiter queued behind the Java waiter", func() bool { return len(j.queue()) == 2 })

	// In one step (so that our waiter cannot refresh its deadline in between): the holder releases, waking the
	// Java waiter, the head; the Java waiter takes the lock, which shifts our waiter's deadline 5 minutes down: it
	// has passed; it releases, which drops our waiter as stale, deletes the lock and publishes to nobody.
	q := j.atomically(j.releaseStep(javaHolder), j.acquireStep(javaWaiter, 30*time.Second), j.releaseStep(javaWaiter))
	dropped := time.Now()
	if len(q) != 0 {
		t.Fatalf("queue after the Java scripts: %v, want empty (our waiter dropped)", q)
	}
	g := <-got
	if g.err != nil {
		t.Fatal(g.err)
	}
	if d := g.at.Sub(dropped); d > time.Second {
		t.Fatalf("our dropped waiter took the free lock %v after it was dropped, want within 1 s", d)
	}
	if got := hgetall(t, srv, "flr"); got[owner] != "1" {
		t.Fatalf("server hash %v, want our waiter %s holding", got, owner)
	}
}

// Dropped while the lock stays held, our waiter is back in the queue within a second. And a Redisson grant to the
// head wakes nobody: our waiter, now head, learns it at its next attempt and takes the lock within 250 ms of the
// Redisson holder's lease end.
func TestFairLockWaiterBehindRedissonFollowsTheLease(t *testing.T) {
	srv := startServer(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 30*time.Second)
	j := redissonFair{t: t, srv: srv, name: "flq", wait: 5 * time.Minute}

	if !j.acquire(javaHolder, 30*time.Second) || j.acquire(javaWaiter, 30*time.Second) {
		t.Fatal("the Java holder and waiter did not start as holder and waiter")
	}
	got := make(chan grant, 1)
	go func() { // owner: this test; returns when the waiter's TryLock does
		_, err := c.FairLock("flq").TryLock(ctx, 20*time.Second, 0)
		got <- grant{time.Now(), err}
	}()
	eventually(t, 5*time.Second, "our waiter queued", func() bool { return len(j.queue()) == 2 })
	owner := j.queue()[1]

	// In one step: the holder releases, the Java waiter (head) takes the lock and shifts our deadline 5 minutes
	// down: it has passed, and nobody is woken. The Java thread's re-entry, like any Redisson script, then drops
	// our waiter, head with a past deadline, and re-arms the lease.
	const javaLease = 2 * time.Second
	reentry := time.Now()
	q := j.atomically(j.releaseStep(javaHolder), j.acquireStep(javaWaiter, javaLease), j.acquireStep(javaWaiter, javaLease))
	dropped := time.Now()
	if slices.Contains(q, owner) {
		t.Fatalf("queue %v still holds our waiter after the Java scripts", q)
	}
	if got := hgetall(t, srv, "flq"); got[javaWaiter] != "2" {
		t.Fatalf("lock after the Java scripts: %v, want the Java waiter holding it twice", got)
	}
	eventually(t, 2*time.Second, "our waiter queued again", func() bool { return slices.Contains(j.queue(), owner) })
	if d := time.Since(dropped); d > time.Second {
		t.Fatalf("our waiter queued again %v after it was dropped, want within 1 s", d)
	}

	g := <-got
	if g.err != nil {
		t.Fatal(g.err)
	}
	// The Java lease (re-armed by the re-entry) ended between reentry+lease and dropped+lease.
	if g.at.Before(reentry.Add(javaLease)) {
		t.Fatalf("our waiter took the lock %v before the Java lease could end", reentry.Add(javaLease).Sub(g.at))
	}
	if late := g.at.Sub(dropped.Add(javaLease)); late > fairHandoffBound {
		t.Fatalf("our waiter took the lock %v after the Java lease ended, want within %v", late, fairHandoffBound)
	}
}

//go:build unix

package main

import (
	"path/filepath"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// A Java service using Redisson holds a lock as the hash field "<its client UUID>:<thread id>" with the hold
// count, under a PEXPIRE, and announces the unlock on redisson_lock__channel:{name}. These tests write and read
// exactly that with raw commands, playing Redisson's part, so they check the wire layout rlock exec relies on.

const javaOwner = "8f2c1a5e-6b7d-4e3f-9a10-b2c3d4e5f607:57"

// redissonTryAcquire is the acquire step of Redisson's RLock (tryLockInnerAsync), written here from its documented
// semantics: take the lock when the key is absent or already ours (incrementing the hold count and resetting the
// lease), else report the holder's PTTL. nil means acquired.
const redissonTryAcquire = `if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`

// holdAsRedisson makes javaOwner hold name, as a Redisson thread would (HSET + PEXPIRE).
func holdAsRedisson(t *testing.T, srv *redistest.Server, name string) {
	t.Helper()
	ctx := ctxTest(t)
	if _, err := srv.Do(ctx, "HSET", name, javaOwner, "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "PEXPIRE", name, "30000"); err != nil {
		t.Fatal(err)
	}
}

func TestE2ERedissonOwnerExcludesExec(t *testing.T) {
	srv := redistest.Start(t)
	holdAsRedisson(t, srv, "shared")

	// Excluded: exec does not get the lock within -wait, and names the Java owner.
	code, _, errs := runRlock(t, srv, execArgs([]string{"-wait", "200ms"}, "shared", helper(t, "exit", "0"))...)
	if code != exitNotAcquired {
		t.Fatalf("exit %d, want %d", code, exitNotAcquired)
	}
	owners, _ := findEvent(t, errs, "timeout")["owners"].([]any)
	if len(owners) != 1 || owners[0].(map[string]any)["owner"] != javaOwner {
		t.Fatalf("timeout does not name the Redisson owner: %v", owners)
	}

	// Woken: a waiting exec gets the lock when the Java side unlocks as Redisson does (DEL + PUBLISH "0" on the
	// lock's channel), long before the 30 s lease would have ended.
	file := filepath.Join(t.TempDir(), "runs")
	p := startRlock(t, srv, execArgs(nil, "shared", holdCmd(t, file, "go", ""))...)
	p.stderr.nextEvent(t, "waiting")
	ctx := ctxTest(t)
	if _, err := srv.Do(ctx, "DEL", "shared"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "PUBLISH", "redisson_lock__channel:{shared}", "0"); err != nil {
		t.Fatal(err)
	}
	acq := p.stderr.nextEvent(t, "acquired")
	if waited, _ := acq.num("waited_ms"); waited > 10000 {
		t.Fatalf("acquired after %vms: the unlock message did not wake the waiter", waited)
	}
	p.stdout.expect(t, "holding")
	p.closeStdin()
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func TestE2EExecExcludesRedissonOwner(t *testing.T) {
	srv := redistest.Start(t)
	file := filepath.Join(t.TempDir(), "runs")
	p := startRlock(t, srv, execArgs(nil, "shared", holdCmd(t, file, "go", ""))...)
	p.stdout.expect(t, "holding")
	owner := p.stderr.nextEvent(t, "acquired").str("owner")

	// The hash is Redisson's layout: one field "<uuid>:<n>" holding 1, under the 30 s watchdog lease.
	n, m := hgetallLen(t, srv, "shared")
	if n != 1 || m[owner] != "1" {
		t.Fatalf("lock hash %v, want {%s: 1}", m, owner)
	}
	ctx := ctxTest(t)
	pttl, err := srv.DoInt(ctx, "PTTL", "shared")
	if err != nil || pttl <= 0 || pttl > 30000 {
		t.Fatalf("PTTL %d (%v), want within the 30 s watchdog lease", pttl, err)
	}
	// Redisson's acquire is refused with the remaining lease.
	r, err := srv.Do(ctx, "EVAL", redissonTryAcquire, "1", "shared", "30000", javaOwner)
	if err != nil || r.Kind != redistest.KindInt || r.Int <= 0 {
		t.Fatalf("Redisson's acquire while rlock exec holds the lock: %v (%v), want a positive PTTL", r, err)
	}

	p.closeStdin()
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	// Released: now Redisson's acquire succeeds.
	r, err = srv.Do(ctx, "EVAL", redissonTryAcquire, "1", "shared", "30000", javaOwner)
	if err != nil || r.Kind != redistest.KindNil {
		t.Fatalf("Redisson's acquire after rlock exec released: %v (%v), want nil (acquired)", r, err)
	}
}

// With -owner, exec acts as the Java thread itself: it re-enters the Redisson hold instead of waiting for it, and
// leaves it as it found it.
func TestE2EExecReentersARedissonHoldWithItsOwner(t *testing.T) {
	srv := redistest.Start(t)
	holdAsRedisson(t, srv, "shared")
	file := filepath.Join(t.TempDir(), "runs")
	p := startRlock(t, srv, execArgs([]string{"-wait", "0", "-owner", javaOwner}, "shared", holdCmd(t, file, "go", ""))...)
	p.stdout.expect(t, "holding")
	if _, m := hgetallLen(t, srv, "shared"); m[javaOwner] != "2" || len(m) != 1 {
		t.Fatalf("while exec re-enters: %v, want {%s: 2}", m, javaOwner)
	}
	p.closeStdin()
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	_, m := hgetallLen(t, srv, "shared")
	if m[javaOwner] != "1" || len(m) != 1 {
		t.Fatalf("after exec: %v, want the Java hold back at 1", m)
	}
	if pttl, err := srv.DoInt(ctxTest(t), "PTTL", "shared"); err != nil || pttl <= 0 {
		t.Fatalf("PTTL %d (%v): the remaining hold lost its lease", pttl, err)
	}
}

package integration

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock"
)

// Wire compatibility with Redisson: a second client plays a Java service with raw commands in Redisson's layout —
// its lock script (HINCRBY of field <uuid>:<threadId>, PEXPIRE), its unlock script (DEL + PUBLISH "0" on
// redisson_lock__channel:{name}) and a SUBSCRIBE to that channel — and the two exclude and wake each other.

// Redisson's RLock scripts as Redisson's RedissonLock sends them (tryLockInnerAsync, unlockInnerAsync), run with
// EVAL as a Java client would.
const (
	redissonLock = `if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end;
return redis.call('pttl', KEYS[1]);`
	redissonUnlock = `if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0;
else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; return nil;`
	javaOwner = "1f0e9c3a-7b2d-4e5f-8a9b-0c1d2e3f4a5b:57" // <Redisson instance UUID>:<Java thread id>
)

type javaClient struct {
	t   *testing.T
	srv *redistest.Server
}

// channel is the lock's unlock channel as Redisson names it (RedissonObject.prefixName): the name wrapped in braces,
// unless it contains "{" already (it then carries its own hash tag and is used as it is).
func (javaClient) channel(name string) string {
	if strings.Contains(name, "{") {
		return "redisson_lock__channel:" + name
	}
	return "redisson_lock__channel:{" + name + "}"
}

// lock runs Redisson's lock script: true when granted, else the PTTL it answered.
func (j javaClient) lock(name string, lease time.Duration) (bool, int64) {
	j.t.Helper()
	r, err := j.srv.Do(context.Background(), "EVAL", redissonLock, "1", name, strconv.FormatInt(lease.Milliseconds(), 10), javaOwner)
	if err != nil {
		j.t.Fatalf("java lock: %v", err)
	}
	return r.Kind == redistest.KindNil, r.Int
}

func (j javaClient) unlock(name string) {
	j.t.Helper()
	r, err := j.srv.Do(context.Background(), "EVAL", redissonUnlock, "2", name, j.channel(name),
		"0", "30000", javaOwner)
	if err != nil || r.Kind != redistest.KindInt || r.Int != 1 {
		j.t.Fatalf("java unlock = %v, %v; want 1", r, err)
	}
}

// subscribe opens a raw RESP2 subscription to the lock's Redisson channel and returns a function that waits for
// the next message's payload.
func (j javaClient) subscribe(name string) func(time.Duration) (string, error) {
	j.t.Helper()
	c, err := net.Dial("tcp", j.srv.Addr())
	if err != nil {
		j.t.Fatal(err)
	}
	j.t.Cleanup(func() { c.Close() })
	c.Write(resp.AppendCommand(nil, "SUBSCRIBE", j.channel(name)))
	var dec resp.Decoder
	var buf []byte
	next := func(d time.Duration) (resp.Value, error) {
		c.SetReadDeadline(time.Now().Add(d))
		tmp := make([]byte, 512)
		for {
			v, n, err := dec.Decode(buf)
			if err == nil {
				buf = buf[n:]
				return v, nil
			}
			if !errors.Is(err, resp.ErrIncomplete) {
				return resp.Value{}, err
			}
			k, err := c.Read(tmp)
			if err != nil {
				return resp.Value{}, err
			}
			buf = append(buf, tmp[:k]...)
		}
	}
	if v, err := next(2 * time.Second); err != nil || len(v.Elems) != 3 || v.Elems[0].Str != "subscribe" {
		j.t.Fatalf("java subscribe: %v %v", v, err)
	}
	return func(d time.Duration) (string, error) {
		v, err := next(d)
		if err != nil {
			return "", err
		}
		if len(v.Elems) != 3 || v.Elems[0].Str != "message" {
			return "", errors.New("not a message: " + v.String())
		}
		return v.Elems[2].Str, nil
	}
}

// TestRedissonLayoutInterop runs on a plain name and on one that carries its own hash tag, for which Redisson does
// not wrap the name in the channel's braces again ("redisson_lock__channel:{orders}:42").
func TestRedissonLayoutInterop(t *testing.T) {
	for _, name := range []string{"shared", "{orders}:42"} {
		t.Run(name, func(t *testing.T) { testRedissonLayoutInterop(t, name) })
	}
}

func testRedissonLayoutInterop(t *testing.T, name string) {
	srv := redistest.Start(t)
	c := newLockClient(t, srv, 0)
	ctx := ctxT(t, 20*time.Second)
	java := javaClient{t, srv}
	l := c.Lock(name)

	t.Run("go waits for java and is woken by its unlock message", func(t *testing.T) {
		if ok, _ := java.lock(name, 30*time.Second); !ok {
			t.Fatal("java could not lock a free lock")
		}
		if _, err := l.TryLock(ctx, 0, 0); !errors.Is(err, rlock.ErrNotAcquired) {
			t.Fatalf("go TryLock while java holds = %v, want ErrNotAcquired", err)
		}
		f := l.LockAsync(ctx)
		// Let the waiter subscribe and settle; it would otherwise wait for the 30 s TTL.
		eventually(t, 2*time.Second, "the go waiter to subscribe", func() bool {
			n, err := srv.Do(ctx, "PUBSUB", "NUMSUB", java.channel(name))
			return err == nil && len(n.Array) == 2 && n.Array[1].Int == 1
		})
		if f.IsDone() {
			t.Fatal("go acquired while java holds")
		}
		released := time.Now()
		java.unlock(name)
		held, err := f.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(released); d > time.Second {
			t.Fatalf("go acquired %v after java's unlock: not woken by the message", d)
		}
		owner := mustOwner(t, held)
		if m := hgetall(t, srv, name); len(m) != 1 || m[owner] != "1" {
			t.Fatalf("lock after go acquired = %v", m)
		}
		// Java is excluded and told the remaining lease, as against another Java client.
		if ok, ttl := java.lock(name, 30*time.Second); ok || ttl <= 0 {
			t.Fatalf("java lock while go holds = %v, ttl %d", ok, ttl)
		}
		mustUnlock(t, l, held)
	})

	t.Run("java waits for go and is woken by its unlock message", func(t *testing.T) {
		held := mustLock(t, l, ctx)
		next := java.subscribe(name)
		if ok, ttl := java.lock(name, 30*time.Second); ok || ttl <= 0 {
			t.Fatalf("java lock while go holds = %v, ttl %d", ok, ttl)
		}
		mustUnlock(t, l, held)
		msg, err := next(2 * time.Second)
		if err != nil || msg != "0" {
			t.Fatalf("java's subscription got %q, %v; want the unlock message \"0\"", msg, err)
		}
		if ok, _ := java.lock(name, 30*time.Second); !ok {
			t.Fatal("java could not lock after go's unlock")
		}
		if _, err := l.TryLock(ctx, 0, 0); !errors.Is(err, rlock.ErrNotAcquired) {
			t.Fatalf("go TryLock while java holds = %v", err)
		}
		// Go can act as the Java owner (same id): it re-enters Java's hold.
		javaCtx := rlock.WithOwner(ctx, javaOwner)
		if _, err := l.Lock(javaCtx); err != nil {
			t.Fatalf("re-entry as the java owner: %v", err)
		}
		if n, err := l.HoldCount(javaCtx); err != nil || n != 2 {
			t.Fatalf("java owner's hold count = %d, %v; want 2", n, err)
		}
		mustUnlock(t, l, javaCtx)
		java.unlock(name)
		if locked, _ := l.IsLocked(ctx); locked {
			t.Fatal("still locked")
		}
	})
}

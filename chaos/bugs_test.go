package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/faultproxy"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock"
)

// Tests in this file reproduce, deterministically, bugs of rlock or conn that the chaos runs found. Each says what
// the run showed and what the package promises.

// TestTryLockHonoursItsWaitWhileAnAttemptIsInFlight: TryLock's wait must bound the call ("It returns
// ErrNotAcquired when the wait ran out"; issue 10: every waiter ends within its wait bound). The chaos runs with
// partitions and latency spikes saw TryLock (plain and fenced, sync and async) return up to 1.7 s after a wait of
// about 1.5 s: the wait's deadline lives on the waiter's timer, which is cancelled whenever an attempt is sent
// (beginAttemptLocked / beginLocked) and only re-armed once the attempt is answered, so a wait that ends while an
// attempt is in flight lasts until the transport gives up on it (the response timeout, and its retries).
//
// Here the waiter goes through a proxy that stalls its requests once it is connected, so its first attempt is in
// flight when the wait ends. With a response timeout of 3 s, a wait of 300 ms must end well before a second, with
// ErrNotAcquired (an attempt answered later is released, as for a waiter whose context ended).
func TestTryLockHonoursItsWaitWhileAnAttemptIsInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	for _, fenced := range []bool{false, true} {
		name := "plain"
		if fenced {
			name = "fenced"
		}
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			px := faultproxy.Start(t, srv.Addr())
			waiter := newClient(t, px.Addr())
			ctx := context.Background()
			lock := "bug:wait-in-flight:" + name
			px.Stall(faultproxy.Upstream)
			var err error
			const wait = 300 * time.Millisecond
			start := time.Now()
			if fenced {
				_, _, err = waiter.FencedLock(lock).TryLock(ctx, wait, 0)
			} else {
				_, err = waiter.Lock(lock).TryLock(ctx, wait, 0)
			}
			took := time.Since(start)
			px.Restore()
			if n, _ := srv.DoInt(ctx, "EXISTS", lock); n != 0 {
				t.Logf("note: the stalled attempt was granted when the proxy resumed")
			}
			t.Logf("TryLock(wait %v) returned after %v: %v", wait, took.Round(time.Millisecond), err)
			if took > wait+700*time.Millisecond {
				t.Errorf("TryLock with a wait of %v returned after %v (the wait does not bound an attempt in flight)",
					wait, took.Round(time.Millisecond))
			}
			if !errors.Is(err, rlock.ErrNotAcquired) {
				t.Errorf("err = %v, want ErrNotAcquired", err)
			}
		})
	}
}

func newClient(t *testing.T, addr string) *rlock.Client {
	t.Helper()
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: addr, ResponseTimeout: 3 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestWaiterRetriesAfterARefusalWithZeroTTL: a waiter must never hang on a lock whose holder vanished ("every wait
// is also bounded by the TTL the failed attempt returned"). In its last millisecond a key is not yet expired and
// PTTL answers 0, so the acquire script refuses with a TTL of 0. The plain lock's waiter treats a bound of 0 as
// "no bound" (waiter.armLocked(0) is how non-head waiters wait for messages only), so the head waits for an unlock
// message that an expiry never publishes, and Lock/LockLease hang until their context ends. Found by the chaos
// runs' lease-expiry scenario (a LockLease that never returned) and reproduced here: a holder whose lock expires
// 1 ms from now (a Redisson client, or a process that died) makes about a third of the acquires hang. The fenced
// lock maps a TTL of 0 to a 1 ms bound (famPTTLRetry, famWait.armLocked) and never hangs.
func TestWaiterRetriesAfterARefusalWithZeroTTL(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr())
	bg := context.Background()
	for _, fenced := range []bool{false, true} {
		hung := 0
		const n = 60
		for i := range n {
			lock := fmt.Sprintf("bug:zero-ttl:%v:%d", fenced, i)
			// Another owner's lock in its last millisecond.
			if _, err := srv.Do(bg, "HSET", lock, "7e0f1a9c-0000-4000-8000-000000000000:1", "1"); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.Do(bg, "PEXPIRE", lock, "1"); err != nil {
				t.Fatal(err)
			}
			// The lock is free within a millisecond: 300 ms is a generous bound.
			ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
			var err error
			if fenced {
				_, _, err = c.FencedLock(lock).LockLease(ctx, time.Second)
			} else {
				_, err = c.Lock(lock).LockLease(ctx, time.Second)
			}
			cancel()
			if err != nil {
				hung++
			}
		}
		if hung > 0 {
			t.Errorf("fenced=%v: %d of %d acquires of a lock that expired within 1 ms were still waiting after 300 ms",
				fenced, hung, n)
		}
	}
}

// TestFencedLockRejectsAMalformedGrant: a fencing token is only worth anything if it is the one the server
// granted. decodeFenced (rlock/fencedlock.go) takes any two-element array for a grant and reads its elements'
// Int fields whatever their type, so a reply that does not say "granted" — here [(integer) 1, "1"] — makes
// FencedLock.Lock return a held context with token 0 and no error. A real redis-server answers the fenced acquire
// script with two integers, so the reply is scripted by a fake server (a protocol fault a real one cannot
// produce: a confused stream, a different script behind the SHA). The decoder should return a *resp.TypeError.
// rlock/result_fuzz_test.go FuzzScriptResults found it, and also that parseAcquire and famDecodeCount take a bulk
// count of "0" for a grant.
func TestFencedLockRejectsAMalformedGrant(t *testing.T) {
	addr := scriptedServer(t, "*2\r\n:1\r\n$1\r\n1\r\n")
	c := newClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	held, token, err := c.FencedLock("bug:malformed").Lock(ctx)
	if err == nil {
		t.Errorf("Lock returned a held context (live: %v) with token %d for the reply [(integer) 1, \"1\"]",
			held.Err() == nil, token)
	}
}

// scriptedServer is a fake Redis that answers PING with PONG, every EVALSHA with reply (raw RESP), and any other
// command with +OK. It serves until the test ends.
func scriptedServer(t *testing.T, reply string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() { // owner: the test; exits when the listener closes
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { // owner: the test; exits when the connection closes
				defer wg.Done()
				serveScripted(c, reply)
			}()
		}
	}()
	return ln.Addr().String()
}

func serveScripted(c net.Conn, reply string) {
	var dec resp.Decoder
	var buf []byte
	chunk := make([]byte, 4096)
	for {
		n, err := c.Read(chunk)
		if err != nil {
			return
		}
		buf = append(buf, chunk[:n]...)
		for {
			v, used, err := dec.Decode(buf)
			if err != nil {
				break
			}
			buf = buf[used:]
			out := "+OK\r\n"
			if len(v.Elems) > 0 {
				switch strings.ToUpper(v.Elems[0].Str) {
				case "PING":
					out = "+PONG\r\n"
				case "EVALSHA", "EVAL":
					out = reply
				}
			}
			if _, err := c.Write([]byte(out)); err != nil {
				return
			}
		}
	}
}

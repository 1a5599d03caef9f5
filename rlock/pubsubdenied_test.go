package rlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// deniedRecorder counts the Observer's pub/sub refusals by command.
type deniedRecorder struct {
	NopObserver
	mu sync.Mutex
	n  map[string]int
	ev []PubSubDeniedEvent
}

func (r *deniedRecorder) PubSubDenied(e PubSubDeniedEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[e.Command]++
	r.ev = append(r.ev, e)
}

func (r *deniedRecorder) count(cmd string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[cmd]
}

// A Redis user without any channel permission: releases that happened are never reported as failures, each kind of
// refusal is reported once per client, and waiters of another client still get the lock, woken by their bounds
// (capped at recheckBound once their client met a refusal) instead of the holder's lease.
func TestWithoutPubSubPermissionReleasesSucceedAndWaitersGetThrough(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := srv.Do(ctx, "ACL", "SETUSER", "nochan", "on", ">pw", "~*", "+@all", "resetchannels"); err != nil {
		t.Fatal(err)
	}
	mk := func(obs Observer) *Client {
		c, err := NewClient(Config{Observer: obs, Conn: conn.Config{Addr: srv.Addr(), Username: "nochan", Password: "pw"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	recA, recB := &deniedRecorder{}, &deniedRecorder{}
	a, b := mk(recA), mk(recB)

	// A plain lock, uncontended: the release's unlock message is refused, the release is not.
	for i := 0; i < 3; i++ {
		held, err := a.Lock("plain").Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Lock("plain").Unlock(held); err != nil {
			t.Fatalf("Unlock without channel permission = %v, want nil: the lock was released", err)
		}
		if !errors.Is(context.Cause(held), ErrReleased) {
			t.Fatalf("held context's cause = %v, want ErrReleased", context.Cause(held))
		}
	}
	if n, err := srv.DoInt(ctx, "EXISTS", "plain"); err != nil || n != 0 {
		t.Fatalf("EXISTS plain = %d, %v after the unlocks", n, err)
	}
	if s := a.Stats(); s.PublishesRefused != 3 {
		t.Errorf("Stats.PublishesRefused = %d, want 3", s.PublishesRefused)
	}
	if n := recA.count("publish"); n != 1 {
		t.Errorf("%d publish refusals reported, want 1 (the first)", n)
	}
	recA.mu.Lock()
	ev := recA.ev[0]
	recA.mu.Unlock()
	var se *resp.ServerError
	if ev.Name != "plain" || ev.Channel != "redisson_lock__channel:{plain}" || !errors.As(ev.Err, &se) {
		t.Errorf("the refusal event = %+v", ev)
	}

	// A read-write lock, contended across clients: the waiter's bound would be the writer's 30 s lease, but its
	// client met a refused subscription, so it looks again every second.
	rwA, rwB := a.ReadWriteLock("rw"), b.ReadWriteLock("rw")
	write, err := rwA.WriteLock().LockLease(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		held, err := rwB.ReadLock().Lock(ctx)
		if err == nil {
			err = rwB.ReadLock().Unlock(held)
		}
		got <- err
	}()
	waitFor(t, func() bool { return recB.count("subscribe") == 1 })
	if err := rwA.WriteLock().Unlock(write); err != nil {
		t.Fatalf("WriteLock.Unlock = %v, want nil", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the reader of the other client: %v (its context bounds it at 20 s; the writer's lease was a minute)", err)
	}

	// The other objects' releases.
	sem := a.Semaphore("sem")
	if _, err := sem.TrySetPermits(ctx, 1); err != nil {
		t.Fatalf("TrySetPermits = %v", err)
	}
	if err := sem.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := sem.Release(ctx, 1); err != nil {
		t.Errorf("Semaphore.Release = %v, want nil", err)
	}
	latch := a.CountDownLatch("latch")
	if _, err := latch.TrySetCount(ctx, 1); err != nil {
		t.Fatalf("TrySetCount = %v", err)
	}
	if n, err := latch.CountDown(ctx); err != nil || n != 0 {
		t.Errorf("CountDown = %d, %v, want 0, nil", n, err)
	}
	if _, err := a.Lock("forced").LockLease(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Lock("forced").ForceUnlock(ctx); err != nil || !ok {
		t.Errorf("ForceUnlock = %v, %v, want true, nil", ok, err)
	}
	if n := recA.count("publish") + recA.count("subscribe") + recB.count("publish"); n > 3 {
		t.Errorf("%d refusals reported, want each kind once per client", n)
	}
}

// A message refused to a script reaches the waiters of the client that ran it, as if it had been published.
func TestRefusedMessageIsDeliveredLocally(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Channels and SUBSCRIBE are allowed, PUBLISH is not.
	if _, err := srv.Do(ctx, "ACL", "SETUSER", "nopub", "on", ">pw", "~*", "&*", "+@all", "-publish"); err != nil {
		t.Fatal(err)
	}
	rec := &deniedRecorder{}
	c, err := NewClient(Config{Observer: rec, Conn: conn.Config{Addr: srv.Addr(), Username: "nopub", Password: "pw"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	latch := c.CountDownLatch("open")
	if _, err := latch.TrySetCount(ctx, 1); err != nil {
		t.Fatal(err)
	}
	awaited := make(chan error, 1)
	go func() { awaited <- latch.Await(ctx) }()
	sh := c.shard("open")
	var q *queue
	waitFor(t, func() bool { // the awaiter is queued and subscribed: only a message or its bound wakes it now
		sh.mu.Lock()
		defer sh.mu.Unlock()
		q = sh.queues[latchChannelName("open")]
		return q != nil && q.sub != nil && q.head != nil && q.head.state == wIdle
	})
	if _, err := latch.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	// The refused message was handed to the awaiter before CountDown returned: it is attempting (or done), not
	// idle until its bound.
	sh.mu.Lock()
	if h := q.head; h != nil && h.state == wIdle {
		t.Error("the awaiter is still idle after the refused message: it was not delivered locally")
	}
	sh.mu.Unlock()
	if err := <-awaited; err != nil {
		t.Fatalf("Await = %v", err)
	}
	if rec.count("publish") != 1 || rec.count("subscribe") != 0 {
		t.Errorf("refusals reported: %v; want one publish", rec.n)
	}
}

// Once its client met a refused message, a waiter does not count on messages any more: a release by another
// process of the same user (whose message is refused too) is found within recheckBound, not at the end of the
// holder's lease.
func TestWaitersOfAClientThatMetARefusalLookAgainEverySecond(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // the holder's lease is a minute
	defer cancel()
	if _, err := srv.Do(ctx, "ACL", "SETUSER", "nopub", "on", ">pw", "~*", "&*", "+@all", "-publish"); err != nil {
		t.Fatal(err)
	}
	mk := func() *Client {
		c, err := NewClient(Config{Conn: conn.Config{Addr: srv.Addr(), Username: "nopub", Password: "pw"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := mk(), mk()
	held, err := a.Lock("first").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Lock("first").Unlock(held); err != nil { // a meets the refusal
		t.Fatal(err)
	}
	// A permit whose lease is a minute: a waiter's bound is when it would come back by itself.
	sem := b.PermitExpirableSemaphore("pes")
	if _, err := sem.TrySetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	id, err := sem.Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		id, err := a.PermitExpirableSemaphore("pes").Acquire(ctx, 0)
		if err == nil {
			err = a.PermitExpirableSemaphore("pes").Release(ctx, id)
		}
		got <- err
	}()
	waitFor(t, func() bool { return a.Stats().Waiters == 1 })
	if err := sem.Release(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v (bounded at 20 s by its context; the permit's lease was a minute)", err)
	}
}

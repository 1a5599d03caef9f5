package workload

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Transport is a bare client's way to run the lock scripts and to subscribe:
// what the raw baselines need from rueidis, go-redis or our conn package.
// Every method is safe for concurrent use.
type Transport interface {
	// Eval runs s with EVALSHA (EVAL on NOSCRIPT) and returns its integer
	// reply, or isNil for a nil reply. It blocks, bounded by ctx.
	Eval(ctx context.Context, s *Script, keys []string, args ...string) (n int64, isNil bool, err error)
	// Subscribe subscribes to channel and returns once the server confirmed
	// it; onMessage is called for every message (it must not block) until
	// unsubscribe is called. It blocks, bounded by ctx.
	Subscribe(ctx context.Context, channel string, onMessage func()) (unsubscribe func(), err error)
	// Close releases the client.
	Close() error
}

// ErrNotOwner is returned by a raw baseline's Unlock when the server did not
// show the lock as held by this owner (expired or taken over).
var ErrNotOwner = errors.New("workload: unlock: the lock is not held by this owner")

// RawLock is the raw baselines' lock: Redisson's protocol written directly on
// a Transport (acquire script; when held by another owner, subscribe to the
// unlock channel before retrying, and wait for an unlock message or the
// holder's remaining TTL; release script publishing the unlock message). It
// implements Library. Its uncontended path is exactly one EVALSHA to acquire
// and one to release, which is what the raw transport comparison measures.
type RawLock struct {
	t       Transport
	id      string
	next    atomic.Uint64
	leaseMs string

	mu   sync.Mutex // guards subs
	subs map[string]*rawSub
}

// rawSub is one shared subscription to an unlock channel.
type rawSub struct {
	refs  int           // guarded by RawLock.mu
	ready chan struct{} // closed once subscribed (or failed)
	err   error         // set before ready is closed
	wake  chan struct{} // one permit per unlock message (buffered 1)
	unsub func()
}

// NewRawLock returns a RawLock on t with the given fixed lease.
func NewRawLock(t Transport, lease time.Duration) *RawLock {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand documents it)
	return &RawLock{
		t: t, id: hex.EncodeToString(b[:]),
		leaseMs: strconv.FormatInt(lease.Milliseconds(), 10),
		subs:    map[string]*rawSub{},
	}
}

var _ Library = (*RawLock)(nil)

type rawHeld struct {
	l     *RawLock
	name  string
	owner string
}

// Lock acquires name for a new owner, waiting as Redisson does.
func (l *RawLock) Lock(ctx context.Context, name string) (Held, error) {
	owner := l.id + ":" + strconv.FormatUint(l.next.Add(1), 10)
	keys := []string{name}
	ttl, isNil, err := l.t.Eval(ctx, AcquireScript, keys, l.leaseMs, owner)
	if err != nil {
		return nil, err
	}
	if isNil {
		return &rawHeld{l: l, name: name, owner: owner}, nil
	}
	sub, err := l.subscribe(ctx, UnlockChannel(name))
	if err != nil {
		return nil, err
	}
	defer l.unsubscribe(UnlockChannel(name), sub)
	var timer *time.Timer
	for {
		ttl, isNil, err = l.t.Eval(ctx, AcquireScript, keys, l.leaseMs, owner)
		if err != nil {
			return nil, err
		}
		if isNil {
			return &rawHeld{l: l, name: name, owner: owner}, nil
		}
		wait := time.Duration(max(ttl, 1)) * time.Millisecond
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		select {
		case <-sub.wake:
		case <-timer.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// subscribe takes a reference on channel's subscription, subscribing first
// if it is the first one, and returns once the subscription is confirmed.
func (l *RawLock) subscribe(ctx context.Context, channel string) (*rawSub, error) {
	l.mu.Lock()
	s, ok := l.subs[channel]
	if ok {
		s.refs++
		l.mu.Unlock()
		select {
		case <-s.ready:
		case <-ctx.Done():
			l.unsubscribe(channel, s)
			return nil, ctx.Err()
		}
		if s.err != nil {
			l.unsubscribe(channel, s)
			return nil, s.err
		}
		return s, nil
	}
	s = &rawSub{refs: 1, ready: make(chan struct{}), wake: make(chan struct{}, 1)}
	l.subs[channel] = s
	l.mu.Unlock()
	s.unsub, s.err = l.t.Subscribe(ctx, channel, func() {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	})
	if s.err != nil {
		s.err = fmt.Errorf("subscribing to %s: %w", channel, s.err)
	}
	close(s.ready)
	if s.err != nil {
		l.unsubscribe(channel, s)
		return nil, s.err
	}
	return s, nil
}

// unsubscribe drops a reference; the last one unsubscribes.
func (l *RawLock) unsubscribe(channel string, s *rawSub) {
	l.mu.Lock()
	s.refs--
	last := s.refs == 0
	if last && l.subs[channel] == s {
		delete(l.subs, channel)
	}
	l.mu.Unlock()
	if last && s.unsub != nil {
		s.unsub()
	}
}

// Unlock runs the release script.
func (h *rawHeld) Unlock(ctx context.Context) error {
	_, isNil, err := h.l.t.Eval(ctx, ReleaseScript, []string{h.name, UnlockChannel(h.name)}, "0", h.l.leaseMs, h.owner)
	if err != nil {
		return err
	}
	if isNil {
		return ErrNotOwner
	}
	return nil
}

// Close closes the transport.
func (l *RawLock) Close() error { return l.t.Close() }

// Commands forwards the transport's command count when it keeps one.
func (l *RawLock) Commands() (uint64, bool) {
	if c, ok := l.t.(CommandCounter); ok {
		return c.Commands()
	}
	return 0, false
}

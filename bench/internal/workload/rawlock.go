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
	// Eval runs s with EVALSHA (EVAL on NOSCRIPT) and returns its reply: nil,
	// an integer, or a bulk string holding an integer. It blocks, bounded by
	// ctx.
	Eval(ctx context.Context, s *Script, keys []string, args ...string) (Reply, error)
	// Subscribe subscribes to channel and returns once the server confirmed
	// it; onMessage is called for every message (it must not block) until
	// unsubscribe is called. It blocks, bounded by ctx.
	Subscribe(ctx context.Context, channel string, onMessage func()) (unsubscribe func(), err error)
	// Close releases the client.
	Close() error
}

// Reply is a lock script's reply as a Transport decodes it.
type Reply struct {
	Kind ReplyKind
	N    int64 // the integer, or the bulk string's value (Kind ReplyBulk)
}

// ReplyKind tells the lock scripts' reply types apart.
type ReplyKind uint8

// The reply kinds of the lock scripts.
const (
	ReplyNil  ReplyKind = iota // nil bulk string
	ReplyInt                   // integer
	ReplyBulk                  // bulk string holding an integer
)

// ErrNotOwner is returned by a raw baseline's Unlock when the server did not
// show the lock as held by this owner (expired or taken over).
var ErrNotOwner = errors.New("workload: unlock: the lock is not held by this owner")

// RawLock is the raw baselines' lock: Redisson's protocol written directly on a Transport with rlock's own scripts
// and arguments (acquire script; when held by another owner, subscribe to the unlock channel before retrying, and
// wait for an unlock message or the holder's remaining TTL; release script, expecting one hold, publishing the
// unlock message). It implements Library. Its uncontended path is exactly one EVALSHA to acquire and one to
// release, which is what the raw transport comparison measures.
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

var (
	_ Library = (*RawLock)(nil)
	_ Binder  = (*RawLock)(nil)
)

// rawBound is one goroutine's lock (Bind): the owner (Redisson's
// "<client id>:<thread id>"), the keys and the arguments of both scripts,
// built once, as a tuned user keeps them.
type rawBound struct {
	l                      *RawLock
	name                   string
	acqKeys, acqArgs       []string
	relKeys, relArgs       []string
	unlockChannel, ownerID string
}

type rawHeld struct {
	b *rawBound
}

// Bind returns name's lock for one goroutine, with a fixed owner and the
// scripts' keys and arguments built once.
func (l *RawLock) Bind(name string) Locker {
	owner := l.id + ":" + strconv.FormatUint(l.next.Add(1), 10)
	b := &rawBound{l: l, name: name, unlockChannel: UnlockChannel(name), ownerID: owner}
	b.acqKeys, b.acqArgs = AcquireArgs(name, l.leaseMs, owner)
	b.relKeys, b.relArgs = ReleaseArgs(name, l.leaseMs, owner)
	return b
}

// Lock acquires name for a new owner, waiting as Redisson does.
func (l *RawLock) Lock(ctx context.Context, name string) (Held, error) {
	return l.Bind(name).Lock(ctx)
}

// Lock acquires the bound lock, waiting as Redisson does: acquire; when held
// by another owner, subscribe to the unlock channel and retry on every
// unlock message or when the holder's lease runs out.
func (b *rawBound) Lock(ctx context.Context) (Held, error) {
	l, keys, args := b.l, b.acqKeys, b.acqArgs
	_, granted, err := l.acquire(ctx, keys, args)
	if err != nil || granted {
		return b.held(err)
	}
	sub, err := l.subscribe(ctx, b.unlockChannel)
	if err != nil {
		return nil, err
	}
	defer l.unsubscribe(b.unlockChannel, sub)
	var timer *time.Timer
	for {
		ttl, granted, err := l.acquire(ctx, keys, args)
		if err != nil || granted {
			return b.held(err)
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

// acquire runs the acquire script once: granted (a bulk string: the hold
// count), or refused with the holder's PTTL.
func (l *RawLock) acquire(ctx context.Context, keys, args []string) (ttl int64, granted bool, err error) {
	r, err := l.t.Eval(ctx, AcquireScript, keys, args...)
	switch {
	case err != nil:
		return 0, false, err
	case r.Kind == ReplyBulk && r.N == 1:
		return 0, true, nil
	case r.Kind == ReplyInt:
		return r.N, false, nil
	}
	// A fresh owner always gets hold count 1; anything else is a bug here.
	return 0, false, fmt.Errorf("workload: acquire replied %+v, want hold count 1 or a PTTL", r)
}

func (b *rawBound) held(err error) (Held, error) {
	if err != nil {
		return nil, err
	}
	return rawHeld{b: b}, nil
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

// Unlock runs the release script, expecting the one hold Lock took.
func (h rawHeld) Unlock(ctx context.Context) error {
	r, err := h.b.l.t.Eval(ctx, ReleaseScript, h.b.relKeys, h.b.relArgs...)
	switch {
	case err != nil:
		return err
	case r.Kind == ReplyInt && r.N == 1:
		return nil
	case r.Kind == ReplyNil:
		return ErrNotOwner
	}
	return fmt.Errorf("workload: release replied %+v, want 1 (released) or nil", r)
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

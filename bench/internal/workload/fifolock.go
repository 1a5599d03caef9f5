package workload

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/locksmith-go/locksmith/bench/internal/redisadmin"
)

// FIFOLock is a reference, not a lock library: the least work a lock that
// serves its contenders first come, first served through Redis does per
// hand-over, to show how close a fair lock across processes can come to it.
// A contender appends its id to a list beside the lock with one RPUSH and holds
// the lock when it is the list's only entry; otherwise it blocks in BLPOP on a
// list of its own. The release, one script, pops the holder and pushes a
// wake-up to the new head's own list: one command to take the lock free, one
// script and one message per hand-over, and nobody else wakes.
//
// It has nothing a real lock needs: no lease or expiry (a holder or waiter that
// dies blocks the key for good), no reentrancy, no fencing. Every goroutine
// bound to a lock gets a connection of its own, which BLPOP blocks while it
// waits; Library.Lock without a binding dials a connection per acquisition.
type FIFOLock struct {
	addr string
	ids  string // random prefix of this process's contender ids
	next atomic.Uint64
	cmds atomic.Uint64 // commands sent (CommandCounter)

	mu     sync.Mutex // guards conns and closed
	conns  map[*redisadmin.Client]struct{}
	closed bool
}

// fifoPassOnLua pops the holder from the head of the queue (KEYS[1]) and
// pushes a wake-up to the new head's own list (ARGV[2] followed by its id),
// answering 1.
const fifoPassOnLua = `redis.call('lpop', KEYS[1])
local head = redis.call('lindex', KEYS[1], 0)
if head then redis.call('rpush', ARGV[2] .. head, '1') end
return 1`

// fifoRelease passes the lock on when ARGV[1] is the head of the queue; 0
// when it was not (nothing changed).
var fifoRelease = newCheckScript(`-- KEYS: queue; ARGV: id, wake-list prefix
if redis.call('lindex', KEYS[1], 0) ~= ARGV[1] then return 0 end
` + fifoPassOnLua)

// fifoLeave takes a waiter that gives up out of the queue: a plain LREM, or
// the release when the lock was handed to it meanwhile. Its wake list is
// dropped either way. Reply 1 when it held the lock and passed it on.
var fifoLeave = newCheckScript(`-- KEYS: queue, wake list; ARGV: id, wake-list prefix
redis.call('del', KEYS[2])
if redis.call('lindex', KEYS[1], 0) ~= ARGV[1] then
  redis.call('lrem', KEYS[1], 1, ARGV[1])
  return 0
end
` + fifoPassOnLua)

// fifoPoll is the server-side timeout of one BLPOP of a waiter: the wait
// repeats until the lock is handed over or the context ends, so it only
// bounds how late a cancelled waiter notices.
const fifoPoll = "0.1"

// ErrFIFOClosed is returned by FIFOLock's Lock after Close.
var ErrFIFOClosed = errors.New("workload: fifo: closed")

// NewFIFO returns the FIFO reference as a Factory's Library.
func NewFIFO(_ context.Context, cfg Config) (Library, error) {
	if cfg.Variant != "" {
		return nil, fmt.Errorf("fifo: unknown variant %q (it has none)", cfg.Variant)
	}
	return &FIFOLock{addr: cfg.Addr, ids: rand.Text(), conns: map[*redisadmin.Client]struct{}{}}, nil
}

// Describe implements Describer.
func (l *FIFOLock) Describe() string {
	return "reference, not a lock: first come, first served on a list beside the key (RPUSH to queue, one " +
		"script to pass the lock to the head, BLPOP wake-up on the waiter's own list); no lease, no expiry; " +
		"one plain connection per goroutine"
}

// Bind implements Binder: a contender id and, from its first Lock, a
// connection of its own.
func (l *FIFOLock) Bind(name string) Locker {
	id := l.ids + ":" + strconv.FormatUint(l.next.Add(1), 10)
	p := "bench-fifo:{" + name + "}:"
	return &fifoLocker{lib: l, id: id, queue: p + "queue", wakePrefix: p + "wake:", wake: p + "wake:" + id}
}

// Lock implements Library with a binding of its own, whose connection the
// Unlock closes.
func (l *FIFOLock) Lock(ctx context.Context, name string) (Held, error) {
	k := l.Bind(name).(*fifoLocker)
	if _, err := k.Lock(ctx); err != nil {
		k.drop()
		return nil, err
	}
	return &fifoHeld{k: k, once: true}, nil
}

// Commands implements CommandCounter: RPUSH, BLPOP and the scripts sent by
// every binding (the server's statistics cannot tell RPUSH and BLPOP from the
// same commands called inside scripts).
func (l *FIFOLock) Commands() (uint64, bool) { return l.cmds.Load(), true }

// Close closes every connection of the lock's bindings.
func (l *FIFOLock) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for c := range l.conns {
		_ = c.Close()
	}
	clear(l.conns)
	return nil
}

// dial connects a binding, unless the lock is closed.
func (l *FIFOLock) dial(ctx context.Context) (*redisadmin.Client, error) {
	c, err := redisadmin.Dial(ctx, l.addr)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = c.Close()
		return nil, ErrFIFOClosed
	}
	l.conns[c] = struct{}{}
	return c, nil
}

// fifoLocker is one goroutine's binding of a lock.
type fifoLocker struct {
	lib                         *FIFOLock
	id, queue, wakePrefix, wake string
	c                           *redisadmin.Client // nil until the first Lock
}

// Lock queues the caller and blocks until it is the head of the queue or ctx
// ends; a caller that leaves takes its entry out (or passes the lock on, when
// it was handed the lock meanwhile).
func (k *fifoLocker) Lock(ctx context.Context) (Held, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if k.c == nil {
		c, err := k.lib.dial(ctx)
		if err != nil {
			return nil, err
		}
		k.c = c
	}
	k.lib.cmds.Add(1)
	v, err := k.c.Do(ctx, "RPUSH", k.queue, k.id)
	if err != nil {
		return nil, fmt.Errorf("fifo: queueing: %w", err)
	}
	if n, _ := v.(int64); n == 1 {
		return &fifoHeld{k: k}, nil
	}
	for ctx.Err() == nil {
		// Not bounded by ctx: a deadline on the connection would make it
		// unusable (redisadmin), and the poll bounds the wait instead.
		k.lib.cmds.Add(1)
		v, err := k.c.Do(context.Background(), "BLPOP", k.wake, fifoPoll)
		if err != nil {
			return nil, fmt.Errorf("fifo: waiting: %w", err)
		}
		if v != nil {
			return &fifoHeld{k: k}, nil
		}
	}
	if _, err := k.eval(context.Background(), fifoLeave, []string{k.queue, k.wake}, k.id, k.wakePrefix); err != nil {
		return nil, fmt.Errorf("fifo: leaving the queue: %w (after %w)", err, ctx.Err())
	}
	return nil, ctx.Err()
}

// eval runs s by EVALSHA, by EVAL when the server does not have it yet.
func (k *fifoLocker) eval(ctx context.Context, s Script, keys []string, args ...string) (any, error) {
	return evalScript(ctx, k.c, s, keys, args, func() { k.lib.cmds.Add(1) })
}

// drop closes an unbound acquisition's connection.
func (k *fifoLocker) drop() {
	if k.c == nil {
		return
	}
	k.lib.mu.Lock()
	delete(k.lib.conns, k.c)
	k.lib.mu.Unlock()
	_ = k.c.Close()
}

// fifoHeld is one acquisition.
type fifoHeld struct {
	k    *fifoLocker
	once bool // taken by Library.Lock: Unlock closes the connection
}

// Unlock passes the lock to the head of the queue, if any.
func (h *fifoHeld) Unlock(ctx context.Context) error {
	if h.once {
		defer h.k.drop()
	}
	v, err := h.k.eval(ctx, fifoRelease, []string{h.k.queue}, h.k.id, h.k.wakePrefix)
	if err != nil {
		return fmt.Errorf("fifo: release: %w", err)
	}
	if n, _ := v.(int64); n != 1 {
		return ErrNotOwner
	}
	return nil
}

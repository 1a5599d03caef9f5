package rlock

import (
	"context"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// permitCall is a waiting call that holds nothing afterwards — taking semaphore permits, awaiting a latch, taking
// rate-limiter permits — returning T: a waiter of the engine (waiter.go) with the object's attempt, the decoding of
// its reply, and the way to give back a grant nobody will see.
type permitCall[T any] struct {
	waiter
	p    future.Promise[T]
	spec *permitSpec[T]
	key  string // the channel it is woken on; "": its bound alone
	v    T      // the grant of the attempt in flight (one attempt at a time), decoded before settle
	need int64  // permits the call takes (wakePermits), at least 1
}

// permits is how many permits the call takes.
func (pc *permitCall[T]) permits() int64 { return pc.need }

// permitSpec describes the calls of one object.
type permitSpec[T any] struct {
	// attempt builds one attempt: a script (nil: a plain command made of args).
	attempt func() (s *conn.Script, keys, args []string)
	// decode interprets the reply (or the transport's or server's error): an outcome, and the value of a grant.
	decode func(v resp.Value, err error) (outcome, T)
	// undo gives back a grant; nil when there is nothing to give back (a latch, a sliding window).
	undo func(T)
}

// newPermitCall prepares a call on the object whose shard is sh, woken on channel key by rule (key "" : by its
// bound alone), needing need permits; wait < 0 waits as long as the context allows, 0 makes one attempt.
func newPermitCall[T any](sh *shard, spec *permitSpec[T], key string, rule wakeRule, need int64,
	wait time.Duration) *permitCall[T] {
	pc := &permitCall[T]{spec: spec, key: key}
	pc.rule, pc.need = rule, max(need, 1)
	pc.init(sh, pc, wait)
	return pc
}

// run starts the call, which ends when ctx ends, and returns it and its future.
func (pc *permitCall[T]) run(ctx context.Context) (*waiter, *future.Future[T]) {
	var zero T
	if pc.sh.c.closed.Load() {
		return nil, future.Completed(zero, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, future.Completed(zero, err)
	}
	if done := ctx.Done(); done != nil {
		pc.p.CancelledBy(done) // the shard's watch of ctx fails the future when ctx ends (ctxwatch.go)
	}
	pc.sh.mu.Lock()
	send := false
	if pc.state == wNew && pc.abandoned == nil {
		pc.watchLocked(ctx)
		send = pc.startLocked(false, pc.startAt)
	}
	pc.sh.mu.Unlock()
	if send {
		pc.send()
	}
	return &pc.waiter, pc.p.Future()
}

func (pc *permitCall[T]) channel() string { return pc.key }

func (pc *permitCall[T]) send() {
	s, keys, args := pc.spec.attempt()
	var f *future.Future[resp.Value]
	if s == nil {
		f = pc.sh.c.conn.Do(background, args...)
	} else {
		f = pc.sh.c.conn.Eval(background, s, keys, args...)
	}
	f.OnComplete(pc.onReply)
}

func (pc *permitCall[T]) onReply(v resp.Value, err error) {
	if err == nil {
		v = pc.sh.c.published(pc.sh, "", v)
	}
	o, val := pc.spec.decode(v, err)
	pc.v = val
	pc.settle(o, false)
}

func (pc *permitCall[T]) grantLocked(outcome) (*hold, error) {
	if pc.sh.c.closed.Load() {
		return nil, ErrClosed
	}
	return nil, nil
}

func (pc *permitCall[T]) succeed(outcome, *hold) {
	if !succeed(pc.sh.c.log, &pc.p, pc.v) {
		pc.undo(outcome{})
	}
}

func (pc *permitCall[T]) fail(err error) bool {
	return fail(pc.sh.c.log, &pc.p, err)
}

func (pc *permitCall[T]) undo(outcome) {
	if pc.spec.undo != nil {
		pc.spec.undo(pc.v)
	}
}

// giveBackResult gives back what a blocking call completed with after it stopped waiting (see
// lockCall.giveBackResult for why it waits for the result).
func (pc *permitCall[T]) giveBackResult() {
	if v, err := pc.p.Future().Get(background); err == nil && pc.spec.undo != nil {
		pc.spec.undo(v)
	}
}

func (pc *permitCall[T]) left(then func()) { runThen(then) }
func (pc *permitCall[T]) lostInFlight()    {}

// unknownOutcome keeps the cause of a permit call: its permits are not taken back (see the callers' docs), and a
// wait that ran out is ErrNotAcquired.
func (pc *permitCall[T]) unknownOutcome(cause error) error {
	if cause == errWaitInFlight {
		return ErrNotAcquired
	}
	return cause
}

var _ waitCall = (*permitCall[struct{}])(nil)

package rlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// PermitExpirableSemaphore is Redisson's RPermitExpirableSemaphore: a semaphore whose every acquired permit has an
// id and, optionally, a lease. A permit is released by its id; a permit whose lease ends goes back to the pool by
// itself (at the next operation on the semaphore), so a process that dies cannot keep permits forever. Leases are
// on the server's clock (Redisson uses the caller's).
//
// Layout (Redisson's): the available count in STRING <name>, the held permits in ZSET {<name>}:timeout scored by
// the end of their lease, wake-ups on redisson_sc:{name}. An id is 16 random bytes, shown as 32 hex digits, stored
// as the raw bytes (as Redisson stores its ids), so ids are interchangeable with a Redisson client's.
//
// Obtain it with Client.PermitExpirableSemaphore; it is cheap, sends nothing until used, and is safe for
// concurrent use. Invalid input (zero or negative permits, a negative lease or wait, a malformed id) returns an
// *ArgumentError before anything is sent.
type PermitExpirableSemaphore struct {
	object
	keys []string // {name, lease set, channel}
}

// PermitExpirableSemaphore returns a handle on the semaphore called name. It does no I/O; an empty name is
// reported by the handle's methods as an *ArgumentError.
func (c *Client) PermitExpirableSemaphore(name string) *PermitExpirableSemaphore {
	return &PermitExpirableSemaphore{object: c.newObject(name),
		keys: []string{name, suffixName(name, "timeout"), prefixName(semChannelPrefix, name)}}
}

// Name returns the semaphore's name (its Redis key).
func (s *PermitExpirableSemaphore) Name() string { return s.name }

func pesLeaseArg(op string, lease time.Duration) error {
	if lease < 0 || (lease > 0 && lease < time.Millisecond) {
		return &ArgumentError{Op: op, Arg: "lease", Value: lease.String(), Reason: "must be at least 1ms, or 0 for a permit without lease"}
	}
	return nil
}

// newPermitIDs draws n random ids: raw bytes for the server, hex for the caller.
func newPermitIDs(n int) (raw, ids []string) {
	raw, ids = make([]string, n), make([]string, n)
	for i := range n {
		var b [16]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		raw[i], ids[i] = string(b[:]), hex.EncodeToString(b[:])
	}
	return raw, ids
}

// permitRaw validates an id (32 hex digits) and returns its bytes.
func permitRaw(op, id string) (string, error) {
	b, err := hex.DecodeString(id)
	if err != nil || len(b) != 16 {
		return "", &ArgumentError{Op: op, Arg: "permit id", Value: strconv.Quote(id), Reason: "must be 32 hexadecimal digits, as returned by Acquire"}
	}
	return string(b), nil
}

func (s *PermitExpirableSemaphore) acquire(ctx context.Context, op string, permits int, wait, lease time.Duration) (*waiter, *future.Future[[]string]) {
	fail := func(err error) (*waiter, *future.Future[[]string]) { return nil, future.Completed[[]string](nil, err) }
	if err := s.checkCtx(op, ctx); err != nil {
		return fail(err)
	}
	if permits <= 0 {
		return fail(permitsError(op, int64(permits)))
	}
	if err := pesLeaseArg(op, lease); err != nil {
		return fail(err)
	}
	leaseArg := millis(lease)
	var ids []string // of the attempt in flight (one at a time): attempt draws them, decode returns them
	spec := &permitSpec[[]string]{
		attempt: func() (*conn.Script, []string, []string) {
			var raw []string
			raw, ids = newPermitIDs(permits)
			return pesAcquireScript, s.keys, append(append([]string{leaseArg}, raw...), s.c.pub())
		},
		decode: func(v resp.Value, err error) (outcome, []string) {
			switch {
			case err != nil:
				return outcome{err: err}, nil
			case v.Type == resp.BulkString && v.Str == "OK":
				return outcome{granted: true}, ids
			case v.Type != resp.Integer:
				return outcome{err: &resp.TypeError{Want: "OK or a wait", Got: v.Type}}, nil
			}
			// The time until the earliest lease ends (a permit comes back then, without a message); -1: none.
			return outcome{bound: ttlBound(v.Int)}, nil
		},
		undo: s.giveBack,
	}
	return newPermitCall(s.sh, spec, s.keys[2], wakePermits, int64(permits), wait).run(ctx)
}

// giveBack releases permits taken for a call whose caller will never see them. It does not block: it may run on
// an event loop.
func (s *PermitExpirableSemaphore) giveBack(ids []string) {
	raw := make([]string, len(ids))
	for i, id := range ids {
		raw[i], _ = permitRaw("", id) // made by newPermitIDs: always valid
	}
	s.release(background, raw).OnComplete(func(_ struct{}, err error) {
		if err != nil && !s.c.closed.Load() {
			s.c.log.Warn("rlock: returning permits taken for an abandoned acquire failed; they return when their lease ends",
				"semaphore", s.name, "err", err)
		}
	})
}

// Acquire takes one permit with lease (0: no lease), waiting as long as ctx allows, and returns its id. It
// returns ctx's error when ctx ended first (a permit taken in flight is released). Safe for concurrent use.
func (s *PermitExpirableSemaphore) Acquire(ctx context.Context, lease time.Duration) (string, error) {
	if err := inCallback(); err != nil {
		return "", err
	}
	ids, err := s.AcquireN(ctx, 1, lease)
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// AcquireN takes permits permits, each with lease, and returns their ids. It blocks like Acquire.
func (s *PermitExpirableSemaphore) AcquireN(ctx context.Context, permits int, lease time.Duration) ([]string, error) {
	if err := inCallback(); err != nil {
		return nil, err
	}
	w, fut := s.acquire(ctx, "PermitExpirableSemaphore.Acquire", permits, -1, lease)
	return waitSync(ctx, w, fut)
}

// AcquireAsync is the asynchronous form of AcquireN. It starts no goroutine.
// Get's context bounds only the wait for the future: when Get gives up, the acquire goes on and permits granted
// later are the future's holder's. To abandon the acquire, cancel ctx (permits granted in flight are given back),
// and give back permits the future reports granted before the cancellation.
func (s *PermitExpirableSemaphore) AcquireAsync(ctx context.Context, permits int, lease time.Duration) *future.Future[[]string] {
	_, fut := s.acquire(ctx, "PermitExpirableSemaphore.AcquireAsync", permits, -1, lease)
	return fut
}

// TryAcquire takes one permit with lease if one becomes available within wait (0: one attempt) and returns its
// id; ErrNotAcquired when the wait ran out, ctx's error when ctx ended first. A permit can become available by a
// release or by another permit's lease ending; both end the wait.
func (s *PermitExpirableSemaphore) TryAcquire(ctx context.Context, wait, lease time.Duration) (string, error) {
	if err := inCallback(); err != nil {
		return "", err
	}
	ids, err := s.TryAcquireN(ctx, 1, wait, lease)
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// TryAcquireN is TryAcquire for several permits, all or none.
func (s *PermitExpirableSemaphore) TryAcquireN(ctx context.Context, permits int, wait, lease time.Duration) ([]string, error) {
	if err := inCallback(); err != nil {
		return nil, err
	}
	if err := tryFormError("PermitExpirableSemaphore.TryAcquire", wait); err != nil {
		return nil, err
	}
	w, fut := s.acquire(ctx, "PermitExpirableSemaphore.TryAcquire", permits, wait, lease)
	return waitSync(ctx, w, fut)
}

// TryAcquireAsync is the asynchronous form of TryAcquireN.
// Get's context bounds only the wait for the future: when Get gives up, the acquire goes on and permits granted
// later are the future's holder's. To abandon the acquire, cancel ctx (permits granted in flight are given back),
// and give back permits the future reports granted before the cancellation.
func (s *PermitExpirableSemaphore) TryAcquireAsync(ctx context.Context, permits int, wait, lease time.Duration) *future.Future[[]string] {
	if err := tryFormError("PermitExpirableSemaphore.TryAcquireAsync", wait); err != nil {
		return future.Completed[[]string](nil, err)
	}
	_, fut := s.acquire(ctx, "PermitExpirableSemaphore.TryAcquireAsync", permits, wait, lease)
	return fut
}

// Release releases the permits with the given ids and wakes the waiters they can satisfy. It returns
// ErrPermitNotFound (wrapped with the count) when some id was not held; the held ones are released all the same.
// It is safe to resend (a released id is simply not found again) and blocks until the server answers or ctx
// ends.
func (s *PermitExpirableSemaphore) Release(ctx context.Context, ids ...string) error {
	if err := inCallback(); err != nil {
		return err
	}
	_, err := s.ReleaseAsync(ctx, ids...).Get(ctx)
	return err
}

// ReleaseAsync is the asynchronous form of Release.
func (s *PermitExpirableSemaphore) ReleaseAsync(ctx context.Context, ids ...string) *future.Future[struct{}] {
	const op = "PermitExpirableSemaphore.Release"
	if err := s.checkCtx(op, ctx); err != nil {
		return future.Completed(struct{}{}, err)
	}
	if len(ids) == 0 {
		return future.Completed(struct{}{}, &ArgumentError{Op: op, Arg: "permit ids", Reason: "at least one is needed"})
	}
	raw := make([]string, len(ids))
	for i, id := range ids {
		r, err := permitRaw(op, id)
		if err != nil {
			return future.Completed(struct{}{}, err)
		}
		raw[i] = r
	}
	return s.release(ctx, raw)
}

func (s *PermitExpirableSemaphore) release(ctx context.Context, raw []string) *future.Future[struct{}] {
	want := len(raw)
	return future.Then(s.c.call(ctx, conn.Cmd{Script: pesReleaseScript, Keys: s.keys, Args: append(raw, s.c.pub())}), func(v resp.Value, err error) (struct{}, error) {
		n, err := intReply(v, err)
		if err == nil && int(n) != want {
			err = errPermitsNotFound(want - int(n))
		}
		return struct{}{}, err
	})
}

// UpdateLease gives the held permit id a new lease counted from now (0: no lease). It returns ErrPermitNotFound
// when the permit is not held. It blocks until the server answers or ctx ends.
func (s *PermitExpirableSemaphore) UpdateLease(ctx context.Context, id string, lease time.Duration) error {
	if err := inCallback(); err != nil {
		return err
	}
	const op = "PermitExpirableSemaphore.UpdateLease"
	if err := s.checkCtx(op, ctx); err != nil {
		return err
	}
	raw, err := permitRaw(op, id)
	if err != nil {
		return err
	}
	if err := pesLeaseArg(op, lease); err != nil {
		return err
	}
	n, err := intReply(s.c.call(ctx, conn.Cmd{Script: pesUpdateLeaseScript, Keys: s.keys, Args: []string{raw, millis(lease), s.c.pub()}}).Get(ctx))
	if err == nil && n != 1 {
		err = ErrPermitNotFound
	}
	return err
}

// Permits returns the permits available and the permits held, after taking back those whose lease ended. It
// blocks until the server answers or ctx ends.
func (s *PermitExpirableSemaphore) Permits(ctx context.Context) (available, held int64, err error) {
	if err := inCallback(); err != nil {
		return 0, 0, err
	}
	if err := s.checkCtx("PermitExpirableSemaphore.Permits", ctx); err != nil {
		return 0, 0, err
	}
	v, err := s.c.call(ctx, conn.Cmd{Script: pesAvailableScript, Keys: s.keys, Args: []string{s.c.pub()}}).Get(ctx)
	if err != nil {
		return 0, 0, err
	}
	if v.Type != resp.Array || len(v.Elems) != 2 {
		return 0, 0, &resp.TypeError{Want: "{available, held}", Got: v.Type}
	}
	return v.Elems[0].Int, v.Elems[1].Int, nil
}

// TrySetPermits sets the number of permits if it was never set, and reports whether it did. permits must not be
// negative. It blocks until the server answers or ctx ends.
func (s *PermitExpirableSemaphore) TrySetPermits(ctx context.Context, permits int) (bool, error) {
	if err := inCallback(); err != nil {
		return false, err
	}
	if err := s.checkCtx("PermitExpirableSemaphore.TrySetPermits", ctx); err != nil {
		return false, err
	}
	if permits < 0 {
		return false, &ArgumentError{Op: "PermitExpirableSemaphore.TrySetPermits", Arg: "permits", Value: strconv.Itoa(permits), Reason: "must not be negative"}
	}
	n, err := intReply(s.c.call(ctx, conn.Cmd{Script: pesTrySetScript, Keys: s.keys, Args: []string{strconv.Itoa(permits), s.c.pub()}}).Get(ctx))
	return n == 1, err
}

// AddPermits adds permits (negative: removes them) and returns the number available afterwards. permits must not
// be zero. It is not resent after an ambiguous transport failure. It blocks until the server answers or ctx ends.
func (s *PermitExpirableSemaphore) AddPermits(ctx context.Context, permits int) (int64, error) {
	if err := inCallback(); err != nil {
		return 0, err
	}
	if err := s.checkCtx("PermitExpirableSemaphore.AddPermits", ctx); err != nil {
		return 0, err
	}
	if permits == 0 {
		return 0, &ArgumentError{Op: "PermitExpirableSemaphore.AddPermits", Arg: "permits", Value: "0", Reason: "must not be zero"}
	}
	return intReply(s.c.callOnce(ctx, conn.Cmd{Script: pesAddScript, Keys: s.keys, Args: []string{strconv.Itoa(permits), s.c.pub()}}).Get(ctx))
}

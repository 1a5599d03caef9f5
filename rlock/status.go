package rlock

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// LockStatus is what the server holds under a lock's name at one moment: whether it is locked, by whom and with
// how many holds each, and for how much longer. It reads the lock's HASH, so it describes a plain, fair or fenced
// lock, and a read-write lock as well (Mode, and the write owner's field "<owner>:write").
type LockStatus struct {
	Name   string
	Locked bool
	// Mode is "read" or "write" for a read-write lock, "" for the other locks and for a free lock.
	Mode string
	// Owners are the owner fields with their hold counts, sorted by owner id.
	Owners []LockOwner
	// TTL is the remaining lease (PTTL), TTLNoKey when the lock is free, TTLNoExpiry for a key without expiry.
	TTL time.Duration
}

// String describes the status on one line, its TTL as FormatTTL prints it: `"orders:42" locked (write) by
// 6f1c...:10000000001 ×2, TTL 29.5s`, or `"orders:42" not locked`. It does not block.
func (s LockStatus) String() string {
	var sb strings.Builder
	sb.WriteString(strconv.Quote(s.Name))
	if !s.Locked {
		sb.WriteString(" not locked")
		if s.TTL != TTLNoKey {
			sb.WriteString(", TTL ")
			sb.WriteString(FormatTTL(s.TTL))
		}
		return sb.String()
	}
	sb.WriteString(" locked")
	if s.Mode != "" {
		sb.WriteString(" (" + s.Mode + ")")
	}
	for i, o := range s.Owners {
		if i == 0 {
			sb.WriteString(" by ")
		} else {
			sb.WriteString(", ")
		}
		sb.WriteString(o.ID)
		if o.Holds != 1 {
			sb.WriteString(" ×" + strconv.FormatInt(o.Holds, 10))
		}
	}
	sb.WriteString(", TTL ")
	sb.WriteString(FormatTTL(s.TTL))
	return sb.String()
}

// LockOwner is one owner of a lock and its hold count.
type LockOwner struct {
	ID    string // <clientUUID>:<ownerID>, or <clientUUID>:<ownerID>:write for a read-write lock's writer
	Holds int64
}

// Status reads the lock's state in one atomic step (the owners and the TTL belong to the same moment): its owners
// and their hold counts, its mode for a read-write lock, and its remaining TTL. A free lock is not an error
// (Locked false, TTL TTLNoKey). When the key exists but is not a lock (another type, or a hash with a field that
// is not a hold count), it returns a *NotLockError (errors.Is ErrNotLock) with the status read so far. It blocks
// until the server answers or ctx ends, is retried after a transport failure (it changes nothing), and is safe for
// concurrent use.
func (l *Lock) Status(ctx context.Context) (LockStatus, error) {
	return blocking(ctx, func() *future.Future[LockStatus] { return l.StatusAsync(ctx) })
}

// StatusAsync is the asynchronous form of Status.
func (l *Lock) StatusAsync(ctx context.Context) *future.Future[LockStatus] {
	return l.status(ctx, "Status")
}

// Status reads the read-write lock's state as Lock.Status does: its mode, its readers and writer with their hold
// counts (the writer's field is "<owner>:write"), and its remaining TTL. It blocks until the server answers or ctx
// ends.
func (rw *ReadWriteLock) Status(ctx context.Context) (LockStatus, error) {
	return blocking(ctx, func() *future.Future[LockStatus] { return rw.StatusAsync(ctx) })
}

// StatusAsync is the asynchronous form of Status.
func (rw *ReadWriteLock) StatusAsync(ctx context.Context) *future.Future[LockStatus] {
	return rw.write.status(ctx, "ReadWriteLock.Status")
}

// status runs statusScript on the lock's key and decodes it.
func (lo *lockObject) status(ctx context.Context, op string) *future.Future[LockStatus] {
	if err := lo.checkCtx(op, ctx); err != nil {
		return future.Completed(LockStatus{}, err)
	}
	name := lo.name
	return future.Then(lo.c.call(ctx, conn.Cmd{Script: statusScript, Keys: []string{name}}),
		func(v resp.Value, err error) (LockStatus, error) {
			if err != nil {
				return LockStatus{}, err
			}
			return decodeStatus(name, v)
		})
}

// decodeStatus decodes statusScript's reply {type, pttl[, hgetall]}.
func decodeStatus(name string, v resp.Value) (LockStatus, error) {
	st := LockStatus{Name: name, TTL: TTLNoKey}
	if v.Type != resp.Array || len(v.Elems) < 2 {
		return st, &resp.TypeError{Want: "{type, pttl, fields}", Got: v.Type}
	}
	typ, err := v.Elems[0].AsString()
	if err != nil {
		return st, err
	}
	ttl, err := v.Elems[1].AsInt64()
	if err != nil {
		return st, err
	}
	if typ == "none" {
		return st, nil
	}
	st.Locked = true
	switch {
	case ttl == -1:
		st.TTL = TTLNoExpiry
	case ttl >= 0:
		st.TTL = serverMillis(ttl)
	}
	if typ != "hash" {
		return st, &NotLockError{Name: name, Detail: "it holds a " + typ}
	}
	if len(v.Elems) < 3 || v.Elems[2].Type != resp.Array {
		return st, &resp.TypeError{Want: "{type, pttl, fields}", Got: v.Type}
	}
	fields := v.Elems[2].Elems
	for i := 0; i+1 < len(fields); i += 2 {
		f, val := fields[i].Str, fields[i+1].Str
		if f == "mode" {
			st.Mode = val // a read-write lock: mode read|write beside the owner fields
			continue
		}
		n, perr := strconv.ParseInt(val, 10, 64)
		if perr != nil {
			return st, &NotLockError{Name: name, Detail: "field " + strconv.Quote(f) + " holds " + strconv.Quote(val) +
				", not a hold count"}
		}
		st.Owners = append(st.Owners, LockOwner{ID: f, Holds: n})
	}
	slices.SortFunc(st.Owners, func(a, b LockOwner) int { return strings.Compare(a.ID, b.ID) })
	return st, nil
}

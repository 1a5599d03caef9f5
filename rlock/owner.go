package rlock

import (
	"context"
	"strconv"
	"strings"
)

// Ownership. Redisson identifies a holder as <clientUUID>:<threadId>. Go hides goroutine ids on purpose, so the
// owner travels in the context instead: an acquire with a context that carries no owner
// takes a new owner id from the client's counter, and the context it returns carries that owner, so acquiring again
// with it re-enters, and Unlock with it releases. WithOwner pins an owner explicitly.

// ownerKey is the context key of the owner. Its value is either a *hold (a held context: the owner is the hold's)
// or a pinnedOwner (WithOwner).
type ownerKey struct{}

// pinnedOwner is an owner id given to WithOwner, validated when it is used.
type pinnedOwner string

// WithOwner returns a copy of ctx that acquires and releases locks as the owner id: "<clientUUID>:<n>" (any
// client's UUID, for example the id a Java service using Redisson holds a lock as) or just "<n>", which means
// "<the using client's UUID>:<n>". n is a decimal integer, as Redisson's thread id is.
//
// Use it to hand a lock from one goroutine to another (both use the same owner), or to re-enter a lock a Redisson
// process holds with the same id. Two goroutines that share an owner share its locks: they must not rely on the
// lock to exclude each other. An id that is not of that form makes the acquire or release return an
// *ArgumentError. A pinned owner is not tied to a Client: any Client may acquire and release as it (unlike a held
// context, which acts only through the Client that made it). A nil ctx is taken as context.Background().
// WithOwner does not block and allocates once.
func WithOwner(ctx context.Context, id string) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithValue(ctx, ownerKey{}, pinnedOwner(id))
}

// OwnerOf returns the owner id ctx acquires locks as ("<clientUUID>:<n>", or what WithOwner was given), and false
// when ctx carries none (an acquire with it takes a new owner) or is nil. A held context of a MultiLock or RedLock
// carries the one owner its locks are held by. It does not block.
func OwnerOf(ctx context.Context) (string, bool) {
	if ctx == nil {
		return "", false
	}
	switch v := ctx.Value(ownerKey{}).(type) {
	case *hold:
		return v.owner, true
	case pinnedOwner:
		return string(v), true
	}
	return "", false
}

// owner is the result of resolving a context's owner for one client.
type owner struct {
	id    string // <clientUUID>:<n>
	hold  *hold  // the hold the context belongs to, when it is a held context (any lock)
	fresh bool   // the id was just made for this call: nobody else can hold anything under it
	num   uint64 // a fresh owner's number (the id's decimal part)
}

// resolveOwner returns the owner ctx acts as for c, making a fresh one when ctx carries none (when mint is true;
// otherwise the result has an empty id). op names the call for an *ArgumentError. A nil ctx carries no owner: it
// is an *ArgumentError for an acquire (mint) and holds nothing otherwise. A held context made by another Client is
// refused (ErrOtherClient): its hold is that Client's, which would go on renewing and counting it.
func (c *Client) resolveOwner(ctx context.Context, op string, mint bool) (owner, error) {
	if ctx == nil {
		if mint {
			return owner{}, nilContextError(op)
		}
		return owner{}, nil
	}
	switch v := ctx.Value(ownerKey{}).(type) {
	case *hold:
		if v.c != c {
			return owner{}, ErrOtherClient
		}
		return owner{id: v.owner, hold: v}, nil
	case pinnedOwner:
		id := string(v)
		i := strings.LastIndexByte(id, ':')
		if !isDecimal(id[i+1:]) || i == 0 {
			return owner{}, &ArgumentError{Op: op, Arg: "owner", Value: strconv.Quote(id),
				Reason: `must be "<clientUUID>:<n>" or "<n>" with n a decimal integer`}
		}
		if i < 0 {
			id = c.id + ":" + id
		}
		return owner{id: id}, nil
	}
	if !mint {
		return owner{}, nil
	}
	id, num := c.mintOwnerID()
	return owner{id: id, fresh: true, num: num}, nil
}

// mintOwnerID returns a new owner id of c, "<c's UUID>:<n>" with n from c's counter, so that nobody else holds
// anything under it, and n.
func (c *Client) mintOwnerID() (string, uint64) {
	var buf [64]byte // one allocation for the id: the string conversion
	b := append(buf[:0], c.id...)
	b = append(b, ':')
	num := mintedOwnerBase + c.nextOwner.Add(1)
	b = strconv.AppendUint(b, num, 10)
	return string(b), num
}

// mintedOwnerBase keeps the owner ids a client makes apart from the small ids callers pick for WithOwner ("1",
// "42", a Java thread id): minted ids are 10,000,000,001 and up. Eleven digits keep an owner string at 48 bytes
// (36-byte UUID, colon, id), one small allocation size class.
const mintedOwnerBase = 10_000_000_000

// isDecimal reports whether s is 1 to 19 ASCII digits (a Java long, as Redisson's thread id).
func isDecimal(s string) bool {
	if len(s) == 0 || len(s) > 19 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

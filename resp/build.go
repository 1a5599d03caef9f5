package resp

import "strings"

// builder turns one frame that scan has validated into a Value. All strings of the frame are copied into one
// strings.Builder sized up front, and all array elements are carved from one []Value, so a frame costs at most two
// allocations whatever its shape.
//
// buf is passed to each method rather than kept in a field: escape analysis does not tell fields apart, and with
// strs's buffer flowing to the heap a buf field would make every caller's read buffer escape too.
type builder struct {
	elems   []Value // unused element slots, taken front to back
	strs    strings.Builder
	strNeed int // bytes to reserve in strs at the first copy
}

// emptyElems is the Elems of every empty array: non-nil, so that only Null marks a null array, and of capacity 0,
// so that appending to it never writes into shared memory.
var emptyElems = []Value{}

// fill builds the value at buf[pos] into *v and returns the index just past it. The frame is known to be valid,
// and its depth to be within the limit, which bounds the recursion.
func (b *builder) fill(v *Value, buf []byte, pos int, lim *Limits) int {
	var t token
	_ = lim.token(buf, pos, 0, &t) // cannot fail: scan accepted the frame
	if t.typ != Array || t.null || t.n == 0 {
		b.scalar(v, buf, &t)
		return t.next
	}
	n := int(t.n)
	elems := b.elems[:n:n] // full slice expression: appending to one array must not overwrite its neighbour
	b.elems = b.elems[n:]
	next := t.next
	for i := range elems {
		next = b.fill(&elems[i], buf, next, lim)
	}
	v.Type, v.Elems = Array, elems
	return next
}

// scalar builds a value that holds no elements (anything but a non-empty array) into *v, which is zero.
func (b *builder) scalar(v *Value, buf []byte, t *token) {
	v.Type = t.typ
	switch {
	case t.null:
		v.Null = true
	case t.typ == Integer:
		v.Int = t.n
	case t.typ == Array:
		v.Elems = emptyElems
	default:
		v.Str = b.str(buf[t.lo:t.hi])
	}
}

// str returns a copy of p as a string, without allocating for common words and single bytes.
func (b *builder) str(p []byte) string {
	if s, ok := intern(p); ok {
		return s
	}
	if b.strs.Cap() == 0 {
		b.strs.Grow(max(b.strNeed, len(p)))
	}
	start := b.strs.Len()
	b.strs.Write(p)
	// strings.Builder never rewrites bytes it has handed out, so this substring stays valid and immutable; with
	// the exact Grow above all strings of the frame share one allocation.
	return b.strs.String()[start:]
}

// intern returns a constant for strings that replies repeat constantly: the status replies of the lock path and
// transactions, the kinds of pub/sub frames, and every string of at most one byte (Go keeps those statically).
func intern(p []byte) (string, bool) {
	switch len(p) {
	case 0:
		return "", true
	case 1:
		return string(p), true // no allocation for one-byte strings
	case 2:
		if string(p) == "OK" {
			return "OK", true
		}
	case 4:
		switch string(p) {
		case "PONG":
			return "PONG", true
		case "pong":
			return "pong", true
		}
	case 6:
		if string(p) == "QUEUED" {
			return "QUEUED", true
		}
	case 7:
		if string(p) == "message" {
			return "message", true
		}
	case 8:
		switch string(p) {
		case "pmessage":
			return "pmessage", true
		case "smessage":
			return "smessage", true
		}
	case 9:
		if string(p) == "subscribe" {
			return "subscribe", true
		}
	case 10:
		switch string(p) {
		case "psubscribe":
			return "psubscribe", true
		case "ssubscribe":
			return "ssubscribe", true
		}
	case 11:
		if string(p) == "unsubscribe" {
			return "unsubscribe", true
		}
	case 12:
		switch string(p) {
		case "punsubscribe":
			return "punsubscribe", true
		case "sunsubscribe":
			return "sunsubscribe", true
		}
	}
	return "", false
}

package resp

import (
	"bytes"
	"math"
	"strconv"
)

// Default limits, applied to every zero (or negative) field of Limits. They suit a client of locks and small
// values: a reply that needs more than them is refused rather than allowed to take the process's memory, and
// each can be raised.
const (
	// DefaultMaxBulkLen is the longest bulk string accepted by default: 8 MiB. (Redis's own proto-max-bulk-len
	// is 512 MiB; a reply that large would cost a client several times that in buffers and copies.)
	DefaultMaxBulkLen = 8 << 20

	// DefaultMaxLineLen is the longest simple-string or error line accepted by default: 1 MiB. Redis sends short
	// ones (OK, PONG, an error message); only a broken or hostile peer sends a line without end. (Integer lines,
	// and the length lines of bulk strings and arrays, are bounded by their 64-bit value: at most 22 bytes.)
	DefaultMaxLineLen = 1 << 20

	// DefaultMaxArrayLen is the most array elements in one reply by default, counting the elements of nested
	// arrays too: 262,144. Decoding allocates one Value (56 bytes) per element, so this bounds that allocation
	// to 14 MiB, and it is checked on each array's header, before anything is allocated.
	DefaultMaxArrayLen = 1 << 18

	// DefaultMaxReplyLen is the most bytes one reply may take by default, all its elements included: 16 MiB, or
	// MaxBulkLen plus 4 KiB when that is more (so that raising MaxBulkLen alone lets such a string through). A
	// decoder's caller buffers at most this much of a reply that has not fully arrived.
	DefaultMaxReplyLen = 16 << 20

	// DefaultMaxDepth is the deepest nesting of arrays accepted (a flat array has depth 1). The deepest replies of
	// Redis 7 (COMMAND DOCS, XINFO STREAM FULL, CLUSTER SHARDS) nest at most 6 levels; 32 leaves room for deep Lua
	// tables while bounding the work and the recursion of the value builder. Scan keeps up to this many levels on
	// its own stack, so it does not allocate with the default.
	DefaultMaxDepth = 32
)

// minValueLen is the fewest bytes a RESP2 value takes ("+\r\n"): what a reply still needs, at least, for each
// element its arrays announced and have not received yet.
const minValueLen = 3

// Limits bounds what the Decoder accepts; a frame over a limit is a *ProtocolError whose Limit field (a
// *LimitError, also found by errors.As) names the limit. A zero or negative field means the default of the same
// name. Every limit is checked as soon as the bytes show it is broken — a bulk string's or array's header, the
// length of a line so far — never after buffering or allocating what the frame announced.
type Limits struct {
	// MaxBulkLen is the longest bulk string, in bytes. Default DefaultMaxBulkLen.
	MaxBulkLen int64
	// MaxLineLen is the longest simple-string or error line, in bytes. Default DefaultMaxLineLen.
	MaxLineLen int64
	// MaxArrayLen is the most array elements in one reply, those of nested arrays included. Default
	// DefaultMaxArrayLen.
	MaxArrayLen int64
	// MaxReplyLen is the most bytes one reply takes on the wire. A frame that announces more (a bulk string, or
	// arrays whose elements need at least 3 bytes each) is refused at the announcement. Default
	// DefaultMaxReplyLen, or MaxBulkLen plus 4 KiB when that is more.
	MaxReplyLen int64
	// MaxDepth is the deepest nesting of arrays; 1 allows arrays of scalars only. Default DefaultMaxDepth. Scan
	// checks it iteratively; Decode then builds the value recursively, one call per level, so a very high limit
	// lets a deep frame use as much goroutine stack.
	MaxDepth int
}

// Resolved returns l with the defaults applied to its zero and negative fields: the limits a Decoder with l
// enforces.
func (l Limits) Resolved() Limits {
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = DefaultMaxBulkLen
	}
	if l.MaxLineLen <= 0 {
		l.MaxLineLen = DefaultMaxLineLen
	}
	if l.MaxArrayLen <= 0 {
		l.MaxArrayLen = DefaultMaxArrayLen
	}
	if l.MaxReplyLen <= 0 {
		l.MaxReplyLen = DefaultMaxReplyLen
		if l.MaxBulkLen <= math.MaxInt64-4096 && l.MaxBulkLen+4096 > l.MaxReplyLen {
			l.MaxReplyLen = l.MaxBulkLen + 4096
		}
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	return l
}

// Decoder decodes RESP2 frames from a byte slice that may end anywhere, as bytes arrive from a connection. It keeps
// no state between calls: the zero value is ready to use, and one Decoder is safe for concurrent use as long as
// Limits is not modified. Its methods never block, never panic on any input, and never keep buf.
type Decoder struct {
	// Limits bounds string and line lengths, array elements, reply size and nesting depth.
	Limits Limits
}

// Decode decodes the first frame in buf. It returns the value and n, the number of bytes of that one frame: decode
// the next frame from buf[n:]. If buf does not hold a whole frame yet, it returns ErrIncomplete and n == 0. If the
// bytes are malformed or over a limit, it returns a *ProtocolError (also with n == 0); the stream cannot be
// resynchronised after that.
//
// Decode first validates the whole frame without building anything (see Scan), so an incomplete frame costs no
// allocation, and what is allocated is bounded by the bytes present. An integer, a null, an empty array, or a
// string of at most one byte or of a common word (OK, PONG, QUEUED, the pub/sub kinds) allocates nothing; any other
// string allocates its copy; an array allocates once for all its elements at every depth, plus once for all its
// strings that need a copy. A scalar is validated and built in one pass.
func (d *Decoder) Decode(buf []byte) (v Value, n int, err error) {
	lim := d.Limits.Resolved()
	var t token
	if err := lim.token(buf, 0, 0, &t); err != nil {
		return Value{}, 0, err
	}
	if t.typ != Array || t.null || t.n == 0 {
		// A scalar, a null or an empty array: validating it was decoding it.
		var b builder
		b.scalar(&v, buf, &t)
		return v, t.next, nil
	}
	f, err := lim.scan(buf)
	if err != nil {
		return Value{}, 0, err
	}
	b := builder{strNeed: f.strBytes, elems: make([]Value, f.elems)}
	n = b.fill(&v, buf, 0, &lim)
	return v, n, nil
}

// Scan returns the length of the first whole frame in buf, validating it as Decode does but building nothing and
// allocating nothing (with the default MaxDepth). It returns (0, ErrIncomplete) when more bytes are needed and
// (0, *ProtocolError) for malformed input, exactly when Decode does. Waiting for a large bulk string costs O(1) per
// call (its header only); a large array is walked element by element on each call.
func (d *Decoder) Scan(buf []byte) (n int, err error) {
	lim := d.Limits.Resolved()
	f, err := lim.scan(buf)
	return f.n, err
}

// Needed returns, when the first frame of buf is incomplete (Decode and Scan return ErrIncomplete), a length that
// frame cannot be shorter than, so a caller can wait for that many bytes before decoding again: a large bulk
// string then costs one scan instead of one per read. It is exact while a bulk string's payload is arriving, and a
// lower bound otherwise (len(buf)+1 at least, plus 3 bytes for each element the frame's arrays still expect). It
// returns 0 when the first frame is complete or malformed. It stays within MaxReplyLen plus one integer line (22
// bytes): a frame that would need more is refused as soon as its bytes say so.
func (d *Decoder) Needed(buf []byte) int {
	lim := d.Limits.Resolved()
	f, err := lim.scan(buf)
	if err != ErrIncomplete {
		return 0
	}
	return f.need
}

// frame describes one validated frame, or how much an incomplete one needs.
type frame struct {
	n        int // bytes in the frame
	elems    int // array elements in the frame, at every level
	strBytes int // bytes of string payloads in the frame
	need     int // incomplete: the least length the frame can have
}

// scan validates the first frame of buf and measures it. Nested arrays are walked iteratively with a stack of the
// elements each open array still expects, so the depth is checked before anything recurses. Every check depends
// only on the bytes up to the value it is about, so an error, once found, stays the same whatever bytes follow.
func (lim *Limits) scan(buf []byte) (frame, error) {
	var f frame
	var inline [DefaultMaxDepth]int64
	open := inline[:0] // open[i]: elements still expected by the array at depth i+1, the one in progress included
	var expected int64 // the sum of open
	pos := 0
	var t token
	for {
		// Each open array's element in progress is this value or holds it; the others are still to come.
		later := expected - int64(len(open))
		if err := lim.token(buf, pos, later*minValueLen, &t); err != nil {
			if err == ErrIncomplete {
				return frame{need: t.next + int(later)*minValueLen}, err
			}
			return frame{}, err
		}
		switch t.typ {
		case SimpleString, ErrorReply, BulkString:
			f.strBytes += t.hi - t.lo
		case Array:
			if !t.null && t.n > 0 {
				if len(open) >= lim.MaxDepth {
					return frame{}, limitErr(pos, "MaxDepth", int64(lim.MaxDepth), int64(len(open)+1))
				}
				if int64(f.elems)+t.n > lim.MaxArrayLen {
					return frame{}, limitErr(pos+1, "MaxArrayLen", lim.MaxArrayLen, int64(f.elems)+t.n)
				}
				f.elems += int(t.n)
				open = append(open, t.n)
				expected += t.n
				pos = t.next
				continue // its elements come next; it completes with its last one
			}
		}
		pos = t.next
		// One value is complete: count it against the innermost open array, closing every array it completes.
		for {
			if len(open) == 0 {
				f.n = pos
				return f, nil
			}
			open[len(open)-1]--
			expected--
			if open[len(open)-1] > 0 {
				break
			}
			open = open[:len(open)-1]
		}
	}
}

// token is the header of one value, with its payload located but not copied.
type token struct {
	typ    Type
	null   bool
	n      int64 // Integer: the value; Array: the element count
	lo, hi int   // SimpleString, ErrorReply, BulkString: the payload is buf[lo:hi]
	// next is the index just past the value (for an array, just past its header). After ErrIncomplete it is the
	// least index the value can end at: exact for a bulk string whose header has arrived, else past len(buf) and
	// at least the shortest value further.
	next int
}

// token validates the value header that starts at buf[pos] and, for scalars, the whole value, and describes it in
// *t (written through a pointer: this is the decoder's innermost call, and copying results out costs). after is
// the least number of bytes the reply still needs after this value (its open arrays' later elements): the value
// must end by MaxReplyLen - after.
func (lim *Limits) token(buf []byte, pos int, after int64, t *token) error {
	t.next = max(len(buf)+1, pos+minValueLen)
	if pos >= len(buf) {
		return ErrIncomplete
	}
	t.typ = Type(buf[pos])
	switch t.typ {
	case SimpleString, ErrorReply:
		end, err := lim.line(buf, pos+1, after)
		if err != nil {
			return err
		}
		t.null, t.lo, t.hi, t.next = false, pos+1, end, end+2
		return nil
	case Integer:
		v, next, err := integerLine(buf, pos+1)
		if err != nil {
			return err
		}
		if int64(next) > lim.MaxReplyLen-after {
			return limitErr(pos, "MaxReplyLen", lim.MaxReplyLen, int64(next)+after)
		}
		t.null, t.n, t.next = false, v, next
		return nil
	case BulkString:
		l, next, err := lim.length(buf, pos+1, lim.MaxBulkLen, "MaxBulkLen")
		if err != nil {
			return err
		}
		if l < 0 {
			t.null, t.next = true, next
			return nil
		}
		// Written so that no sum can overflow: l <= MaxBulkLen and next <= len(buf).
		if l > lim.MaxReplyLen-after-int64(next)-2 {
			return limitErr(pos+1, "MaxReplyLen", lim.MaxReplyLen, int64(next)+l+2+after)
		}
		end := next + int(l)
		// The header alone says whether the payload is all here: O(1) while a large bulk string arrives.
		if end+2 > len(buf) {
			t.next = end + 2
			return ErrIncomplete
		}
		if buf[end] != '\r' {
			return protoErr(end, "bulk string of "+strconv.FormatInt(l, 10)+" bytes not followed by CR: found "+quoteByte(buf[end]))
		}
		if buf[end+1] != '\n' {
			return protoErr(end+1, "expected LF after CR, found "+quoteByte(buf[end+1]))
		}
		t.null, t.lo, t.hi, t.next = false, next, end, end+2
		return nil
	case Array:
		l, next, err := lim.length(buf, pos+1, lim.MaxArrayLen, "MaxArrayLen")
		if err != nil {
			return err
		}
		if l > 0 && l > (lim.MaxReplyLen-after-int64(next))/minValueLen {
			return limitErr(pos+1, "MaxReplyLen", lim.MaxReplyLen, int64(next)+l*minValueLen+after)
		}
		t.null, t.n, t.next = l < 0, l, next
		return nil
	}
	return protoErr(pos, "unknown type byte "+quoteByte(buf[pos])+" (want one of + - : $ *)")
}

// line finds the CRLF that ends the simple-string or error line starting at buf[start] and returns the index of
// its CR. The line may contain neither CR nor LF and be at most MaxLineLen bytes long, and it must end (CRLF, then
// after more bytes) within MaxReplyLen. The first problem in byte order is the one reported, so an error, once
// present, stays the same whatever bytes follow; and the search never looks further than the limit, so waiting
// for the end of a line costs at most MaxLineLen per call.
func (lim *Limits) line(buf []byte, start int, after int64) (int, error) {
	max, which, bound := lim.MaxLineLen, "MaxLineLen", lim.MaxLineLen
	if room := lim.MaxReplyLen - after - int64(start) - 2; room < max {
		max, which, bound = room, "MaxReplyLen", lim.MaxReplyLen
	}
	if max < 0 {
		return 0, limitErr(start, which, bound, int64(start)+2+after)
	}
	window := buf[start:]
	if int64(len(window)) > max {
		window = window[:max+1] // fits: max < len(window)
	}
	cr := bytes.IndexByte(window, '\r')
	body := window
	if cr >= 0 {
		body = window[:cr]
	}
	if lf := bytes.IndexByte(body, '\n'); lf >= 0 {
		return 0, protoErr(start+lf, "LF inside a simple string or error line")
	}
	if cr < 0 {
		if int64(len(window)) > max {
			got := int64(len(window))
			if which == "MaxReplyLen" {
				got += int64(start) + 2 + after
			}
			return 0, limitErr(start, which, bound, got)
		}
		return 0, ErrIncomplete
	}
	if start+cr+1 >= len(buf) {
		return 0, ErrIncomplete
	}
	if c := buf[start+cr+1]; c != '\n' {
		return 0, protoErr(start+cr+1, "expected LF after CR, found "+quoteByte(c))
	}
	return start + cr, nil
}

// length parses the length of a bulk string or array, which starts at buf[start], checks it against max (the limit
// named limit), and returns it (-1 for null) with the index just past its CRLF.
func (lim *Limits) length(buf []byte, start int, max int64, limit string) (int64, int, error) {
	l, next, err := integerLine(buf, start)
	if err != nil {
		return 0, 0, err
	}
	if buf[start] == '-' {
		if l == -1 {
			return -1, next, nil
		}
		what := "bulk string"
		if limit == "MaxArrayLen" {
			what = "array"
		}
		return 0, 0, protoErr(start, "negative "+what+" length "+string(buf[start:next-2])+" (only -1, null, is allowed)")
	}
	if l > max {
		return 0, 0, limitErr(start, limit, max, l)
	}
	return l, next, nil
}

// integerLine parses an optionally negative decimal int64 of at most 19 digits terminated by CRLF, starting at
// buf[start]. It returns the value and the index just past the CRLF. It reports overflow, a missing digit and a
// stray byte as soon as they are present, without waiting for the CRLF.
func integerLine(buf []byte, start int) (int64, int, error) {
	i := start
	neg := i < len(buf) && buf[i] == '-'
	if neg {
		i++
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++ // -9223372036854775808 is representable
	}
	var u uint64
	digits := i
	// Up to 18 digits cannot overflow, so they need no check; replies' numbers are nearly all that short.
	for fast := min(len(buf), i+18); i < fast; i++ {
		c := buf[i] - '0'
		if c > 9 {
			break
		}
		u = u*10 + uint64(c)
	}
	for ; i < len(buf); i++ {
		c := buf[i] - '0'
		if c > 9 {
			break
		}
		d := uint64(c)
		if u > (limit-d)/10 {
			return 0, 0, protoErr(start, "number overflows a 64-bit integer")
		}
		if i-digits >= 19 {
			// Leading zeros: no server sends them, and without this bound "$000..." would be a line without end.
			return 0, 0, protoErr(start, "number with more than 19 digits")
		}
		u = u*10 + d
	}
	if i >= len(buf) {
		return 0, 0, ErrIncomplete
	}
	if i == digits {
		return 0, 0, protoErr(i, "expected a digit, found "+quoteByte(buf[i]))
	}
	if buf[i] != '\r' {
		return 0, 0, protoErr(i, "expected a digit or CR, found "+quoteByte(buf[i]))
	}
	if i+1 >= len(buf) {
		return 0, 0, ErrIncomplete
	}
	if buf[i+1] != '\n' {
		return 0, 0, protoErr(i+1, "expected LF after CR, found "+quoteByte(buf[i+1]))
	}
	if neg {
		return int64(-u), i + 2, nil // for u == 1<<63 this wraps to MinInt64, as intended
	}
	return int64(u), i + 2, nil
}

package resp

import (
	"bytes"
	"math"
	"strconv"
)

// Default limits, applied to every zero (or negative) field of Limits.
const (
	// DefaultMaxBulkLen is Redis's default proto-max-bulk-len (512 MiB): the largest bulk string a default server
	// accepts, so the largest it can hold and send back. It also bounds simple-string and error lines.
	DefaultMaxBulkLen = 512 << 20

	// DefaultMaxArrayLen is 2^32-1, the most elements a Redis list, set, hash or sorted set can hold (and the
	// default of hiredis), so no legal reply is refused. It is a sanity check on the header, not a memory guard:
	// memory is bounded by the bytes present, because the decoder allocates nothing until the whole frame has
	// arrived, and every element takes at least 3 bytes on the wire.
	DefaultMaxArrayLen = 1<<32 - 1

	// DefaultMaxDepth is the deepest nesting of arrays accepted (a flat array has depth 1). The deepest replies of
	// Redis 7 (COMMAND DOCS, XINFO STREAM FULL, CLUSTER SHARDS) nest at most 6 levels; 32 leaves room for deep Lua
	// tables while bounding the work and the recursion of the value builder. Scan keeps up to this many levels on
	// its own stack, so it does not allocate with the default.
	DefaultMaxDepth = 32
)

// Limits bounds what the Decoder accepts; a frame over a limit is a *ProtocolError. A zero or negative field means
// the default of the same name.
type Limits struct {
	// MaxBulkLen is the longest bulk string, in bytes, and also the longest simple-string or error line. Default
	// DefaultMaxBulkLen.
	MaxBulkLen int64
	// MaxArrayLen is the most elements in one array. Default DefaultMaxArrayLen.
	MaxArrayLen int64
	// MaxDepth is the deepest nesting of arrays; 1 allows arrays of scalars only. Default DefaultMaxDepth. Scan
	// checks it iteratively; Decode then builds the value recursively, one call per level, so a very high limit
	// lets a deep frame use as much goroutine stack.
	MaxDepth int
}

// resolved returns l with the defaults applied.
func (l Limits) resolved() Limits {
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = DefaultMaxBulkLen
	}
	if l.MaxArrayLen <= 0 {
		l.MaxArrayLen = DefaultMaxArrayLen
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
	// Limits bounds bulk lengths, array lengths and nesting depth.
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
	lim := d.Limits.resolved()
	var t token
	if err := lim.token(buf, 0, &t); err != nil {
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
	lim := d.Limits.resolved()
	f, err := lim.scan(buf)
	return f.n, err
}

// frame describes one validated frame.
type frame struct {
	n        int // bytes in the frame
	elems    int // array elements in the frame, at every level
	strBytes int // bytes of string payloads in the frame
}

// scan validates the first frame of buf and measures it. Nested arrays are walked iteratively with a stack of the
// elements each open array still expects, so the depth is checked before anything recurses.
func (lim *Limits) scan(buf []byte) (frame, error) {
	var f frame
	var inline [DefaultMaxDepth]int64
	open := inline[:0] // open[i]: elements still expected by the array at depth i+1
	pos := 0
	var t token
	for {
		if err := lim.token(buf, pos, &t); err != nil {
			return frame{}, err
		}
		switch t.typ {
		case SimpleString, ErrorReply, BulkString:
			f.strBytes += t.hi - t.lo
		case Array:
			if !t.null && t.n > 0 {
				if len(open) >= lim.MaxDepth {
					return frame{}, protoErr(pos, "arrays nested deeper than the limit of "+strconv.Itoa(lim.MaxDepth))
				}
				f.elems += int(t.n)
				open = append(open, t.n)
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
	next   int   // index just past the value (for an array, just past its header)
}

// token validates the value header that starts at buf[pos] and, for scalars, the whole value, and describes it in
// *t (written through a pointer: this is the decoder's innermost call, and copying results out costs).
func (lim *Limits) token(buf []byte, pos int, t *token) error {
	if pos >= len(buf) {
		return ErrIncomplete
	}
	t.typ = Type(buf[pos])
	switch t.typ {
	case SimpleString, ErrorReply:
		end, err := lim.line(buf, pos+1)
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
		t.null, t.n, t.next = false, v, next
		return nil
	case BulkString:
		l, next, err := lim.length(buf, pos+1, lim.MaxBulkLen, "bulk string")
		if err != nil {
			return err
		}
		if l < 0 {
			t.null, t.next = true, next
			return nil
		}
		// The header alone says whether the payload is all here: O(1) while a large bulk string arrives.
		// (Written so that no sum can overflow, whatever MaxBulkLen is.)
		if l > int64(len(buf)-next)-2 {
			return ErrIncomplete
		}
		end := next + int(l)
		if buf[end] != '\r' {
			return protoErr(end, "bulk string of "+strconv.FormatInt(l, 10)+" bytes not followed by CR: found "+quoteByte(buf[end]))
		}
		if buf[end+1] != '\n' {
			return protoErr(end+1, "expected LF after CR, found "+quoteByte(buf[end+1]))
		}
		t.null, t.lo, t.hi, t.next = false, next, end, end+2
		return nil
	case Array:
		l, next, err := lim.length(buf, pos+1, lim.MaxArrayLen, "array")
		if err != nil {
			return err
		}
		t.null, t.n, t.next = l < 0, l, next
		return nil
	}
	return protoErr(pos, "unknown type byte "+quoteByte(buf[pos])+" (want one of + - : $ *)")
}

// line finds the CRLF that ends the simple-string or error line starting at buf[start] and returns the index of
// its CR. The line may contain neither CR nor LF and be at most MaxBulkLen bytes long. The first problem in byte
// order is the one reported, so an error, once present, stays the same whatever bytes follow; and the search never
// looks further than the limit, so waiting for the end of a line costs at most MaxBulkLen per call.
func (lim *Limits) line(buf []byte, start int) (int, error) {
	window := buf[start:]
	if int64(len(window)) > lim.MaxBulkLen {
		window = window[:lim.MaxBulkLen+1] // fits: MaxBulkLen < len(window)
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
		if int64(len(window)) > lim.MaxBulkLen {
			return 0, protoErr(start, "simple string or error line longer than the limit of "+strconv.FormatInt(lim.MaxBulkLen, 10)+" bytes")
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

// length parses the length of a bulk string or array, which starts at buf[start], checks it against max, and
// returns it (-1 for null) with the index just past its CRLF.
func (lim *Limits) length(buf []byte, start int, max int64, what string) (int64, int, error) {
	l, next, err := integerLine(buf, start)
	if err != nil {
		return 0, 0, err
	}
	if buf[start] == '-' {
		if l == -1 {
			return -1, next, nil
		}
		return 0, 0, protoErr(start, "negative "+what+" length "+string(buf[start:next-2])+" (only -1, null, is allowed)")
	}
	if l > max {
		return 0, 0, protoErr(start, what+" length "+strconv.FormatInt(l, 10)+" over the limit of "+strconv.FormatInt(max, 10))
	}
	return l, next, nil
}

// integerLine parses an optionally negative decimal int64 terminated by CRLF, starting at buf[start]. It returns
// the value and the index just past the CRLF. It reports overflow, a missing digit and a stray byte as soon as
// they are present, without waiting for the CRLF.
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

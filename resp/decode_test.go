package resp

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// arr builds an array Value; arr() is the empty array (non-nil Elems, as the decoder produces).
func arr(elems ...Value) Value {
	if elems == nil {
		elems = []Value{}
	}
	return Value{Type: Array, Elems: elems}
}

func simple(s string) Value   { return Value{Type: SimpleString, Str: s} }
func errReply(s string) Value { return Value{Type: ErrorReply, Str: s} }
func integer(i int64) Value   { return Value{Type: Integer, Int: i} }
func bulk(s string) Value     { return Value{Type: BulkString, Str: s} }

var (
	nullBulk  = Value{Type: BulkString, Null: true}
	nullArray = Value{Type: Array, Null: true}
)

type validCase struct {
	name string
	in   string
	want Value
}

var validCases = []validCase{
	{"simple string OK", "+OK\r\n", simple("OK")},
	{"simple string empty", "+\r\n", simple("")},
	{"simple string with spaces", "+hello world\r\n", simple("hello world")},
	{"error", "-ERR unknown command 'x'\r\n", errReply("ERR unknown command 'x'")},
	{"error NOSCRIPT", "-NOSCRIPT No matching script. Please use EVAL.\r\n", errReply("NOSCRIPT No matching script. Please use EVAL.")},
	{"integer zero", ":0\r\n", integer(0)},
	{"integer negative", ":-1\r\n", integer(-1)},
	{"integer max", ":9223372036854775807\r\n", integer(9223372036854775807)},
	{"integer min", ":-9223372036854775808\r\n", integer(-9223372036854775808)},
	{"integer leading zeros", ":007\r\n", integer(7)},
	{"integer negative zero", ":-0\r\n", integer(0)},
	{"bulk empty", "$0\r\n\r\n", bulk("")},
	{"bulk", "$5\r\nhello\r\n", bulk("hello")},
	{"bulk one byte", "$1\r\n0\r\n", bulk("0")},
	{"bulk binary with CRLF inside", "$6\r\na\r\nb\x00\xff\r\n", bulk("a\r\nb\x00\xff")},
	{"bulk null", "$-1\r\n", nullBulk},
	{"array empty", "*0\r\n", arr()},
	{"array null", "*-1\r\n", nullArray},
	{"array of scalars", "*3\r\n$3\r\nfoo\r\n:1\r\n+OK\r\n", arr(bulk("foo"), integer(1), simple("OK"))},
	{"array with nulls", "*3\r\n$-1\r\n*-1\r\n-ERR x\r\n", arr(nullBulk, nullArray, errReply("ERR x"))},
	{"nested arrays", "*2\r\n*1\r\n:1\r\n*2\r\n*0\r\n$1\r\nx\r\n", arr(arr(integer(1)), arr(arr(), bulk("x")))},
	{"nested arrays closing together", "*2\r\n*2\r\n*1\r\n:1\r\n:2\r\n:3\r\n", arr(arr(arr(integer(1)), integer(2)), integer(3))},
	{"pub/sub message", "*3\r\n$7\r\nmessage\r\n$29\r\nredisson_lock__channel:{lock}\r\n$1\r\n0\r\n",
		arr(bulk("message"), bulk("redisson_lock__channel:{lock}"), bulk("0"))},
}

func TestDecodeEveryType(t *testing.T) {
	var d Decoder
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			v, n, err := d.Decode([]byte(tc.in))
			if err != nil {
				t.Fatalf("Decode(%q) error: %v", tc.in, err)
			}
			if n != len(tc.in) {
				t.Errorf("Decode(%q) n = %d, want %d", tc.in, n, len(tc.in))
			}
			if !reflect.DeepEqual(v, tc.want) {
				t.Errorf("Decode(%q) = %#v, want %#v", tc.in, v, tc.want)
			}
			sn, err := d.Scan([]byte(tc.in))
			if err != nil || sn != len(tc.in) {
				t.Errorf("Scan(%q) = %d, %v; want %d, nil", tc.in, sn, err, len(tc.in))
			}
			// Trailing bytes (the next frame, or garbage) are not consumed and do not change the value.
			v2, n2, err := d.Decode([]byte(tc.in + "?garbage"))
			if err != nil || n2 != len(tc.in) || !reflect.DeepEqual(v2, tc.want) {
				t.Errorf("with trailing bytes: %v, %d, %v", v2, n2, err)
			}
		})
	}
}

func TestDecodeNullAndEmptyAreDistinct(t *testing.T) {
	var d Decoder
	empty, _, _ := d.Decode([]byte("*0\r\n"))
	null, _, _ := d.Decode([]byte("*-1\r\n"))
	if empty.Null || empty.Elems == nil || len(empty.Elems) != 0 {
		t.Errorf("empty array = %#v, want non-null with empty non-nil Elems", empty)
	}
	if !null.Null || null.Elems != nil {
		t.Errorf("null array = %#v, want Null and nil Elems", null)
	}
	emptyBulk, _, _ := d.Decode([]byte("$0\r\n\r\n"))
	if emptyBulk.Null {
		t.Error("empty bulk string decoded as null")
	}
}

func TestDecodeStringsDoNotAliasTheBuffer(t *testing.T) {
	var d Decoder
	buf := []byte("*2\r\n$5\r\nhello\r\n+world\r\n")
	v, _, err := d.Decode(buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = 'X'
	}
	if v.Elems[0].Str != "hello" || v.Elems[1].Str != "world" {
		t.Errorf("strings changed with the buffer: %v", v)
	}
}

func TestDecodeArraysDoNotShareCapacity(t *testing.T) {
	var d Decoder
	v, _, err := d.Decode([]byte("*2\r\n*1\r\n:1\r\n*1\r\n:2\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	_ = append(v.Elems[0].Elems, integer(99)) // must not write into the sibling array
	if v.Elems[1].Elems[0].Int != 2 {
		t.Errorf("appending to one array overwrote its sibling: %v", v)
	}
}

func TestDecodeManyFramesInOrder(t *testing.T) {
	var d Decoder
	var all string
	for _, tc := range validCases {
		all += tc.in
	}
	buf := []byte(all)
	for i, tc := range validCases {
		v, n, err := d.Decode(buf)
		if err != nil {
			t.Fatalf("frame %d (%s): %v", i, tc.name, err)
		}
		if !reflect.DeepEqual(v, tc.want) {
			t.Fatalf("frame %d (%s) = %v, want %v", i, tc.name, v, tc.want)
		}
		buf = buf[n:]
	}
	if len(buf) != 0 {
		t.Fatalf("%d bytes left over", len(buf))
	}
	if _, n, err := d.Decode(buf); !errors.Is(err, ErrIncomplete) || n != 0 {
		t.Fatalf("Decode(empty) = %d, %v; want 0, ErrIncomplete", n, err)
	}
}

// TestDecodeEveryPrefixIsIncomplete cuts a multi-frame buffer at every byte: the whole frames before the cut decode
// in order, and what remains is incomplete, with nothing consumed.
func TestDecodeEveryPrefixIsIncomplete(t *testing.T) {
	var d Decoder
	var all string
	var ends []int // end offset of each frame
	for _, tc := range validCases {
		all += tc.in
		ends = append(ends, len(all))
	}
	for cut := 0; cut <= len(all); cut++ {
		buf := []byte(all[:cut])
		off := 0
		for i := 0; ; i++ {
			v, n, err := d.Decode(buf[off:])
			if i < len(ends) && ends[i] <= cut {
				if err != nil || !reflect.DeepEqual(v, validCases[i].want) || off+n != ends[i] {
					t.Fatalf("cut %d, frame %d: got %v, %d, %v", cut, i, v, n, err)
				}
				off += n
				continue
			}
			if !errors.Is(err, ErrIncomplete) || n != 0 || !reflect.DeepEqual(v, Value{}) {
				t.Fatalf("cut %d, frame %d: got %v, %d, %v; want ErrIncomplete with n == 0", cut, i, v, n, err)
			}
			if sn, serr := d.Scan(buf[off:]); !errors.Is(serr, ErrIncomplete) || sn != 0 {
				t.Fatalf("cut %d: Scan = %d, %v; want 0, ErrIncomplete", cut, sn, serr)
			}
			break
		}
	}
}

type malformedCase struct {
	name   string
	lim    Limits
	in     string
	offset int
	reason string // a substring of the Reason
}

var malformedCases = []malformedCase{
	{name: "unknown type byte", in: "?\r\n", offset: 0, reason: "unknown type byte"},
	{name: "unknown type byte in array", in: "*2\r\n:1\r\n!x\r\n", offset: 8, reason: "unknown type byte"},
	{name: "RESP3 type byte", in: "_\r\n", offset: 0, reason: "unknown type byte"},
	{name: "inline command is not a reply", in: "PING\r\n", offset: 0, reason: "unknown type byte"},
	{name: "negative bulk length", in: "$-2\r\n", offset: 1, reason: "negative bulk string length -2"},
	{name: "negative zero bulk length", in: "$-0\r\n", offset: 1, reason: "negative"},
	{name: "negative array length", in: "*-5\r\n", offset: 1, reason: "negative array length -5"},
	{name: "nested negative array length", in: "*1\r\n*-2\r\n", offset: 5, reason: "negative array length"},
	{name: "non-digit bulk length", in: "$x\r\n", offset: 1, reason: "expected a digit"},
	{name: "empty bulk length", in: "$\r\n", offset: 1, reason: "expected a digit"},
	{name: "empty array length", in: "*\r\n", offset: 1, reason: "expected a digit"},
	{name: "minus without digits", in: "$-\r\n", offset: 2, reason: "expected a digit"},
	{name: "digit then junk in length", in: "$1x\r\n", offset: 2, reason: "expected a digit or CR"},
	{name: "space in length", in: "*1 \r\n", offset: 2, reason: "expected a digit or CR"},
	{name: "plus sign in integer", in: ":+1\r\n", offset: 1, reason: "expected a digit"},
	{name: "empty integer", in: ":\r\n", offset: 1, reason: "expected a digit"},
	{name: "junk in integer", in: ":12a\r\n", offset: 3, reason: "expected a digit or CR"},
	{name: "bare LF after integer", in: ":1\n", offset: 2, reason: "expected a digit or CR"},
	{name: "CR without LF after length", in: "$1\rx", offset: 3, reason: "expected LF after CR"},
	{name: "CR without LF after integer", in: ":1\r\r", offset: 3, reason: "expected LF after CR"},
	{name: "integer overflow", in: ":9223372036854775808\r\n", offset: 1, reason: "overflows"},
	{name: "integer underflow", in: ":-9223372036854775809\r\n", offset: 1, reason: "overflows"},
	{name: "length overflow reported before CRLF", in: "$99999999999999999999", offset: 1, reason: "overflows"},
	{name: "leading zeros", in: "$00000000000000000001\r\n", offset: 1, reason: "more than 19 digits"},
	{name: "array length overflow", in: "*18446744073709551616\r\n", offset: 1, reason: "overflows"},
	{name: "bulk longer than its length", in: "$3\r\nabcd\r\n", offset: 7, reason: "not followed by CR"},
	{name: "bulk missing CRLF", in: "$3\r\nabc\n\r", offset: 7, reason: "not followed by CR"},
	{name: "bulk CR without LF", in: "$3\r\nabc\rX", offset: 8, reason: "expected LF after CR"},
	{name: "bulk in array missing CRLF", in: "*1\r\n$1\r\nab\r\n", offset: 9, reason: "not followed by CR"},
	{name: "simple string CR without LF", in: "+OK\rX", offset: 4, reason: "expected LF after CR"},
	{name: "LF inside simple string", in: "+O\nK\r\n", offset: 2, reason: "LF inside"},
	{name: "LF inside error reported before CR", in: "-ERR\n", offset: 4, reason: "LF inside"},
	{name: "error after valid elements", in: "*3\r\n$1\r\na\r\n:1\r\n$-3\r\n", offset: 16, reason: "negative"},
	{name: "default bulk limit", in: "$8388609\r\n", offset: 1, reason: "bulk string of 8388609 bytes is over Limits.MaxBulkLen (8388608)"},
	{name: "default line limit", in: "+" + strings.Repeat("a", DefaultMaxLineLen+1), offset: 1, reason: "is over Limits.MaxLineLen (1048576)"},
	{name: "default array limit", in: "*262145\r\n", offset: 1, reason: "reply of 262145 array elements or more is over Limits.MaxArrayLen (262144)"},
	{name: "default array limit across arrays", in: "*2\r\n*262143\r\n", offset: 5, reason: "262145 array elements or more is over Limits.MaxArrayLen"},
	{name: "default depth limit", in: strings.Repeat("*1\r\n", DefaultMaxDepth+1), offset: 4 * DefaultMaxDepth, reason: "arrays nested 33 deep is over Limits.MaxDepth (32)"},
	{name: "bulk limit", lim: Limits{MaxBulkLen: 4}, in: "$5\r\nhello\r\n", offset: 1, reason: "bulk string of 5 bytes is over Limits.MaxBulkLen (4)"},
	{name: "line limit", lim: Limits{MaxLineLen: 4}, in: "+hello\r\n", offset: 1, reason: "line of 5 bytes or more is over Limits.MaxLineLen (4)"},
	{name: "line limit before CR arrives", lim: Limits{MaxLineLen: 4}, in: "-ERRORS", offset: 1, reason: "over Limits.MaxLineLen"},
	{name: "array limit", lim: Limits{MaxArrayLen: 2}, in: "*3\r\n:1\r\n:2\r\n:3\r\n", offset: 1, reason: "reply of 3 array elements or more is over Limits.MaxArrayLen (2)"},
	{name: "nested array limit", lim: Limits{MaxArrayLen: 2}, in: "*1\r\n*3\r\n", offset: 5, reason: "over Limits.MaxArrayLen"},
	{name: "elements of nested arrays add up", lim: Limits{MaxArrayLen: 4}, in: "*2\r\n*2\r\n:1\r\n:2\r\n*2\r\n", offset: 17, reason: "reply of 6 array elements or more"},
	{name: "reply limit on a bulk header", lim: Limits{MaxReplyLen: 20}, in: "$14\r\n", offset: 1, reason: "reply of 21 bytes or more is over Limits.MaxReplyLen (20)"},
	{name: "reply limit on an array header", lim: Limits{MaxReplyLen: 20}, in: "*6\r\n", offset: 1, reason: "reply of 22 bytes or more is over Limits.MaxReplyLen (20)"},
	{name: "reply limit counts later elements", lim: Limits{MaxReplyLen: 20}, in: "*3\r\n$5\r\n", offset: 5, reason: "over Limits.MaxReplyLen"},
	{name: "reply limit on a line", lim: Limits{MaxReplyLen: 10}, in: "+abcdefghij", offset: 1, reason: "over Limits.MaxReplyLen (10)"},
	{name: "reply limit on an integer", lim: Limits{MaxReplyLen: 10}, in: "*2\r\n:12345\r\n", offset: 4, reason: "over Limits.MaxReplyLen (10)"},
	{name: "depth limit", lim: Limits{MaxDepth: 2}, in: "*1\r\n*1\r\n*1\r\n:1\r\n", offset: 8, reason: "arrays nested 3 deep is over Limits.MaxDepth (2)"},
}

func TestDecodeMalformed(t *testing.T) {
	for _, tc := range malformedCases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decoder{Limits: tc.lim}
			v, n, err := d.Decode([]byte(tc.in))
			checkProtocolError(t, "Decode", err, tc)
			if n != 0 || !reflect.DeepEqual(v, Value{}) {
				t.Errorf("Decode consumed %d bytes and returned %v; want 0 and the zero Value", n, v)
			}
			sn, serr := d.Scan([]byte(tc.in))
			checkProtocolError(t, "Scan", serr, tc)
			if sn != 0 {
				t.Errorf("Scan returned n = %d, want 0", sn)
			}
			// Bytes arriving later never turn an error into something else.
			_, _, err = d.Decode([]byte(tc.in + "\r\n+OK\r\n"))
			checkProtocolError(t, "Decode with more bytes", err, tc)
		})
	}
}

func checkProtocolError(t *testing.T, op string, err error, tc malformedCase) {
	t.Helper()
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("%s(%q) error = %v, want *ProtocolError", op, tc.in, err)
	}
	if pe.Offset != tc.offset {
		t.Errorf("%s(%q) offset = %d, want %d (%v)", op, tc.in, pe.Offset, tc.offset, pe)
	}
	if !strings.Contains(pe.Reason, tc.reason) {
		t.Errorf("%s(%q) reason = %q, want it to contain %q", op, tc.in, pe.Reason, tc.reason)
	}
	if !strings.Contains(pe.Error(), "byte "+itoa(tc.offset)) {
		t.Errorf("Error() = %q does not name the offset", pe.Error())
	}
}

func TestDecodeLimitsAtTheBoundary(t *testing.T) {
	d := Decoder{Limits: Limits{MaxBulkLen: 5, MaxLineLen: 5, MaxArrayLen: 4, MaxDepth: 2}}
	for _, in := range []string{
		"$5\r\nhello\r\n",
		"+hello\r\n",
		"-ERROR\r\n",
		"*2\r\n:1\r\n:2\r\n",
		"*2\r\n*2\r\n:1\r\n:2\r\n*0\r\n",
		"*1\r\n*-1\r\n", // a null array at depth 2 opens nothing
	} {
		if _, n, err := d.Decode([]byte(in)); err != nil || n != len(in) {
			t.Errorf("Decode(%q) = %d, %v; want it accepted at the limit", in, n, err)
		}
	}
}

func TestDecodeLargeBulkWaitsWithoutAllocating(t *testing.T) {
	var d Decoder
	// A header announcing the largest bulk string allowed with only a few bytes present: incomplete, and nothing
	// sized by the header.
	buf := []byte("$8388608\r\nabc")
	allocs := testingAllocs(t, func() {
		if _, n, err := d.Decode(buf); !errors.Is(err, ErrIncomplete) || n != 0 {
			t.Fatalf("got %d, %v", n, err)
		}
	})
	if allocs != 0 {
		t.Errorf("an incomplete large bulk allocated %v times", allocs)
	}
	// The largest array allowed likewise.
	buf = []byte("*262144\r\n:1\r\n")
	allocs = testingAllocs(t, func() {
		if _, _, err := d.Decode(buf); !errors.Is(err, ErrIncomplete) {
			t.Fatalf("got %v", err)
		}
	})
	if allocs != 0 {
		t.Errorf("an incomplete large array allocated %v times", allocs)
	}
}

func TestDecodeDeepNestingWithRaisedLimit(t *testing.T) {
	// Depth beyond the inline stack of Scan, with the limit raised: still decoded, iteratively.
	const depth = 1000
	d := Decoder{Limits: Limits{MaxDepth: depth}}
	in := strings.Repeat("*1\r\n", depth) + ":7\r\n"
	v, n, err := d.Decode([]byte(in))
	if err != nil || n != len(in) {
		t.Fatalf("got %d, %v", n, err)
	}
	for i := 0; i < depth; i++ {
		if v.Type != Array || len(v.Elems) != 1 {
			t.Fatalf("level %d: %v", i, v.Type)
		}
		v = v.Elems[0]
	}
	if v.Int != 7 {
		t.Fatalf("innermost value = %v", v)
	}
}

func TestDecoderZeroValueUsesDefaults(t *testing.T) {
	got := Limits{}.Resolved()
	want := Limits{MaxBulkLen: DefaultMaxBulkLen, MaxLineLen: DefaultMaxLineLen, MaxArrayLen: DefaultMaxArrayLen,
		MaxReplyLen: DefaultMaxReplyLen, MaxDepth: DefaultMaxDepth}
	if got != want {
		t.Errorf("resolved zero Limits = %+v, want %+v", got, want)
	}
	if neg := (Limits{MaxBulkLen: -1, MaxLineLen: -1, MaxArrayLen: -1, MaxReplyLen: -1, MaxDepth: -1}).Resolved(); neg != want {
		t.Errorf("resolved negative Limits = %+v, want %+v", neg, want)
	}
}

func TestDecodeAllocations(t *testing.T) {
	var d Decoder
	cases := []struct {
		in   string
		want float64
	}{
		{"$-1\r\n", 0},
		{":29998\r\n", 0},
		{"+OK\r\n", 0},
		{"+QUEUED\r\n", 0},
		{"*-1\r\n", 0},
		{"*0\r\n", 0},
		{"$1\r\n0\r\n", 0},
		{"$39\r\n1b1b8f7c-3c1e-4c5b-9a57-0e4c2f4b7d10:42\r\n", 1},
		{"*3\r\n:1\r\n:0\r\n:1\r\n", 1},                              // the elements only
		{"*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n", 1},            // kind interned, one-byte channel static
		{"*3\r\n$7\r\nmessage\r\n$5\r\nchan1\r\n$5\r\nhello\r\n", 2}, // elements + one block for both strings
		{hgetall(10), 2},
		{"*2\r\n*2\r\n$3\r\nabc\r\n$3\r\ndef\r\n*1\r\n$3\r\nghi\r\n", 2}, // nested: still one block each
	}
	for _, tc := range cases {
		buf := []byte(tc.in)
		got := testingAllocs(t, func() {
			if _, _, err := d.Decode(buf); err != nil {
				t.Fatal(err)
			}
		})
		if got != tc.want {
			t.Errorf("Decode(%q): %v allocations, want %v", tc.in, got, tc.want)
		}
	}
}

func TestDecodeDoesNotMakeTheBufferEscape(t *testing.T) {
	var d Decoder
	// If Decode let buf escape, the caller's stack array would move to the heap: one more allocation.
	got := testingAllocs(t, func() {
		var a [64]byte
		n := copy(a[:], "*2\r\n$3\r\nabc\r\n:1\r\n")
		if _, _, err := d.Decode(a[:n]); err != nil {
			t.Fatal(err)
		}
	})
	if got != 2 {
		t.Errorf("%v allocations, want 2 (elements and strings)", got)
	}
}

func TestDecoderIsSafeForConcurrentUse(t *testing.T) {
	d := &Decoder{Limits: Limits{MaxDepth: 8}} // shared, never mutated
	var all []byte
	for _, tc := range validCases {
		all = append(all, tc.in...)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() { // owned by this test; waited for below
			defer wg.Done()
			for rep := 0; rep < 200; rep++ {
				buf := all
				for i := range validCases {
					v, n, err := d.Decode(buf)
					if err != nil || !reflect.DeepEqual(v, validCases[i].want) {
						errs <- fmt.Errorf("frame %d: %v, %v", i, v, err)
						return
					}
					buf = buf[n:]
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestNeededSaysHowLongAnIncompleteFrameIsAtLeast(t *testing.T) {
	var d Decoder
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"$10\r\nab", 17},                  // exact once the header is here
		{"$10", 4},                         // the header itself is incomplete
		{"*3\r\n:1\r\n", 8 + 3 + 3},        // two elements of at least 3 bytes each
		{"*2\r\n*2\r\n:1\r\n", 12 + 3 + 3}, // one more in the inner array, one in the outer
		{"*2\r\n$5\r\nab", 4 + 11 + 3},
		{"+PON", 5},
		{"", 3},
		{"+OK\r\n", 0}, // complete
		{"?", 0},       // malformed
	} {
		if got := d.Needed([]byte(tc.in)); got != tc.want {
			t.Errorf("Needed(%q) = %d; want %d", tc.in, got, tc.want)
		}
	}
}

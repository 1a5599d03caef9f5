package resp

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// randValue returns a random value of at most the given depth, in the exact shape the decoder produces.
func randValue(r *rand.Rand, depth int) Value {
	kinds := 5
	if depth == 0 {
		kinds = 4 // no arrays
	}
	switch r.IntN(kinds) {
	case 0:
		return Value{Type: SimpleString, Str: randLine(r)}
	case 1:
		return Value{Type: ErrorReply, Str: randLine(r)}
	case 2:
		return Value{Type: Integer, Int: randInt(r)}
	case 3:
		if r.IntN(8) == 0 {
			return Value{Type: BulkString, Null: true}
		}
		return Value{Type: BulkString, Str: randBytes(r)}
	}
	if r.IntN(8) == 0 {
		return Value{Type: Array, Null: true}
	}
	elems := make([]Value, r.IntN(6))
	for i := range elems {
		elems[i] = randValue(r, depth-1)
	}
	return Value{Type: Array, Elems: elems}
}

func randInt(r *rand.Rand) int64 {
	switch r.IntN(4) {
	case 0:
		return []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 9, 10, -10}[r.IntN(8)]
	case 1:
		return r.Int64N(100)
	}
	return int64(r.Uint64())
}

// randBytes returns any bytes, CR and LF included, sometimes one of the interned words.
func randBytes(r *rand.Rand) string {
	if r.IntN(10) == 0 {
		return []string{"OK", "message", "pmessage", "subscribe", "PONG", "QUEUED"}[r.IntN(6)]
	}
	b := make([]byte, r.IntN(40))
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return string(b)
}

// randLine returns bytes without CR or LF, as a simple string or error line must be.
func randLine(r *rand.Rand) string {
	b := []byte(randBytes(r))
	for i, c := range b {
		if c == '\r' || c == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}

func TestRoundTripRandomValues(t *testing.T) {
	r := rand.New(rand.NewPCG(20240601, 2))
	var d Decoder
	var stream []byte
	var sent []Value
	for i := 0; i < 5000; i++ {
		v := randValue(r, 4)
		enc := AppendValue(nil, v)
		got, n, err := d.Decode(enc)
		if err != nil || n != len(enc) {
			t.Fatalf("value %d: Decode(%q) = %d, %v", i, enc, n, err)
		}
		if !reflect.DeepEqual(got, v) {
			t.Fatalf("value %d: round trip of %v gave %v", i, v, got)
		}
		if sn, err := d.Scan(enc); err != nil || sn != n {
			t.Fatalf("value %d: Scan = %d, %v; Decode said %d", i, sn, err, n)
		}
		stream = append(stream, enc...)
		sent = append(sent, v)
	}
	// The same values back to back, fed in random chunks as a transport reads them.
	var buf []byte
	var got []Value
	for rest := stream; len(rest) > 0; {
		k := min(len(rest), 1+r.IntN(64))
		buf = append(buf, rest[:k]...)
		rest = rest[k:]
		for {
			v, n, err := d.Decode(buf)
			if errors.Is(err, ErrIncomplete) {
				if n != 0 {
					t.Fatalf("ErrIncomplete with n = %d", n)
				}
				break
			}
			if err != nil {
				t.Fatalf("after %d values: %v", len(got), err)
			}
			got = append(got, v)
			buf = buf[n:]
		}
	}
	if len(buf) != 0 || !reflect.DeepEqual(got, sent) {
		t.Fatalf("chunked decode gave %d values (%d bytes left), want %d", len(got), len(buf), len(sent))
	}
}

func TestRoundTripCommands(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	var d Decoder
	for i := 0; i < 2000; i++ {
		args := make([]string, 1+r.IntN(8))
		for j := range args {
			args[j] = randBytes(r)
		}
		enc := AppendCommand(nil, args...)
		v, n, err := d.Decode(enc)
		if err != nil || n != len(enc) || len(v.Elems) != len(args) {
			t.Fatalf("command %q: %v, %d, %v", args, v, n, err)
		}
		for j, a := range args {
			if v.Elems[j].Type != BulkString || v.Elems[j].Str != a {
				t.Fatalf("command %q: arg %d = %v", args, j, v.Elems[j])
			}
		}
		// Integers sent as bulk strings come back through AsInt64.
		x := randInt(r)
		v, _, err = d.Decode(AppendBulkInt(nil, x))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := v.AsInt64(); err != nil || got != x {
			t.Fatalf("AppendBulkInt(%d) came back as %d, %v", x, got, err)
		}
		v, _, err = d.Decode(AppendBulkBytes(nil, []byte(args[0])))
		if err != nil || v.Str != args[0] {
			t.Fatalf("AppendBulkBytes(%q) came back as %v, %v", args[0], v, err)
		}
	}
}

package resp

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the decoder, with the default limits and with small ones, and checks that it
// never panics and that its answers agree with each other:
//   - n is within the buffer, and Scan finds the same frame length or the same error as Decode;
//   - a decoded frame re-encodes (AppendValue) to bytes that decode to an equal value;
//   - a frame decodes the same alone and followed by anything, and each of its proper prefixes is incomplete;
//   - an incomplete buffer consumes nothing, Needed says more bytes than it holds, and no more than a frame it
//     is a prefix of;
//   - a protocol error names a byte inside the buffer and stays the same
//     error whatever bytes follow.
//
// Run it with: go test -run '^$' -fuzz '^FuzzDecode$' ./resp
// The seed corpus is the table cases below plus testdata/fuzz/FuzzDecode (captured real replies among them).
func FuzzDecode(f *testing.F) {
	for _, tc := range validCases {
		f.Add([]byte(tc.in))
	}
	for _, tc := range malformedCases {
		f.Add([]byte(tc.in))
	}
	decoders := []*Decoder{
		{},
		{Limits: Limits{MaxBulkLen: 16, MaxArrayLen: 4, MaxDepth: 3}},
		{Limits: Limits{MaxBulkLen: 16, MaxLineLen: 8, MaxArrayLen: 6, MaxReplyLen: 40, MaxDepth: 3}},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range decoders {
			checkDecoder(t, d, data)
		}
	})
}

func checkDecoder(t *testing.T, d *Decoder, data []byte) {
	v, n, err := d.Decode(data)
	sn, serr := d.Scan(data)
	var pe *ProtocolError
	switch {
	case err == nil:
		if n <= 0 || n > len(data) {
			t.Fatalf("Decode(%q) consumed %d bytes of %d", data, n, len(data))
		}
		if serr != nil || sn != n {
			t.Fatalf("Decode(%q) took %d bytes but Scan says %d, %v", data, n, sn, serr)
		}
		frame := data[:n:n]
		alone, an, aerr := d.Decode(frame)
		if aerr != nil || an != n || !reflect.DeepEqual(alone, v) {
			t.Fatalf("frame %q decodes differently alone: %v, %d, %v", frame, alone, an, aerr)
		}
		more, mn, merr := d.Decode(append(frame, "*1\r\n+trailing"...))
		if merr != nil || mn != n || !reflect.DeepEqual(more, v) {
			t.Fatalf("frame %q decodes differently when followed by bytes: %v, %d, %v", frame, more, mn, merr)
		}
		checkPrefixesIncomplete(t, d, frame)
		enc := AppendValue(nil, v)
		again, en, eerr := d.Decode(enc)
		if eerr != nil || en != len(enc) || !reflect.DeepEqual(again, v) {
			t.Fatalf("%v re-encoded as %q decodes as %v, %d, %v", v, enc, again, en, eerr)
		}
	case errors.Is(err, ErrIncomplete):
		if n != 0 || !reflect.DeepEqual(v, Value{}) {
			t.Fatalf("incomplete Decode(%q) returned %v, %d", data, v, n)
		}
		if !errors.Is(serr, ErrIncomplete) || sn != 0 {
			t.Fatalf("Decode(%q) is incomplete but Scan says %d, %v", data, sn, serr)
		}
		if need := d.Needed(data); need <= len(data) || int64(need) > d.Limits.Resolved().MaxReplyLen+22 {
			t.Fatalf("Decode(%q) is incomplete but Needed says %d", data, need)
		}
	case errors.As(err, &pe):
		if n != 0 || !reflect.DeepEqual(v, Value{}) {
			t.Fatalf("failed Decode(%q) returned %v, %d", data, v, n)
		}
		if pe.Offset < 0 || pe.Offset >= len(data) {
			t.Fatalf("Decode(%q): offset %d outside the buffer: %v", data, pe.Offset, pe)
		}
		if !reflect.DeepEqual(serr, err) || sn != 0 {
			t.Fatalf("Decode(%q) = %v but Scan = %d, %v", data, err, sn, serr)
		}
		_, _, merr := d.Decode(append(data[:len(data):len(data)], "\r\n:1\r\n"...))
		if !reflect.DeepEqual(merr, err) {
			t.Fatalf("Decode(%q) = %v, but with more bytes %v", data, err, merr)
		}
	default:
		t.Fatalf("Decode(%q) returned an unexpected error type %T: %v", data, err, err)
	}
}

// checkPrefixesIncomplete checks that proper prefixes of a valid frame are incomplete: all of them for short
// frames, a sample for long ones (to keep the fuzzer fast).
func checkPrefixesIncomplete(t *testing.T, d *Decoder, frame []byte) {
	check := func(k int) {
		if _, n, err := d.Decode(frame[:k]); !errors.Is(err, ErrIncomplete) || n != 0 {
			t.Fatalf("prefix %q of frame %q: n = %d, err = %v; want ErrIncomplete", frame[:k], frame, n, err)
		}
		if need := d.Needed(frame[:k]); need <= k || need > len(frame) {
			t.Fatalf("prefix %q of frame %q: Needed = %d; want more than the prefix, at most the frame", frame[:k], frame, need)
		}
	}
	if len(frame) <= 64 {
		for k := 0; k < len(frame); k++ {
			check(k)
		}
		return
	}
	for _, k := range []int{0, 1, len(frame) / 3, len(frame) / 2, len(frame) - 2, len(frame) - 1} {
		check(k)
	}
}

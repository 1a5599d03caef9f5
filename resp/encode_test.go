package resp

import (
	"math"
	"testing"
)

func TestEncodeExactBytes(t *testing.T) {
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"array len 0", AppendArrayLen(nil, 0), "*0\r\n"},
		{"array len 12", AppendArrayLen(nil, 12), "*12\r\n"},
		{"bulk string", AppendBulkString(nil, "hello"), "$5\r\nhello\r\n"},
		{"bulk string empty", AppendBulkString(nil, ""), "$0\r\n\r\n"},
		{"bulk string binary", AppendBulkString(nil, "a\r\n\x00"), "$4\r\na\r\n\x00\r\n"},
		{"bulk bytes", AppendBulkBytes(nil, []byte("xyz")), "$3\r\nxyz\r\n"},
		{"bulk bytes nil is empty", AppendBulkBytes(nil, nil), "$0\r\n\r\n"},
		{"bulk int", AppendBulkInt(nil, 42), "$2\r\n42\r\n"},
		{"bulk int zero", AppendBulkInt(nil, 0), "$1\r\n0\r\n"},
		{"bulk int negative", AppendBulkInt(nil, -30000), "$6\r\n-30000\r\n"},
		{"bulk int min", AppendBulkInt(nil, math.MinInt64), "$20\r\n-9223372036854775808\r\n"},
		{"command", AppendCommand(nil, "SET", "k", "v"), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"},
		{"command no args", AppendCommand(nil), "*0\r\n"},
		{"simple string", AppendSimpleString(nil, "OK"), "+OK\r\n"},
		{"error", AppendError(nil, "ERR x"), "-ERR x\r\n"},
		{"integer", AppendInteger(nil, -7), ":-7\r\n"},
		{"null bulk", AppendNullBulk(nil), "$-1\r\n"},
		{"null array", AppendNullArray(nil), "*-1\r\n"},
		{"appends after existing bytes", AppendBulkString([]byte("prefix"), "a"), "prefix$1\r\na\r\n"},
		{"value nested", AppendValue(nil, arr(integer(1), arr(bulk("a"), nullBulk), nullArray, simple("OK"), errReply("E"))),
			"*5\r\n:1\r\n*2\r\n$1\r\na\r\n$-1\r\n*-1\r\n+OK\r\n-E\r\n"},
		{"value with a foreign type byte, for fault injection", AppendValue(nil, Value{Type: '_', Str: "x"}), "_x\r\n"},
	}
	for _, tc := range cases {
		if string(tc.got) != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestEncodeLargeLengths(t *testing.T) {
	// Lengths with several digits exercise the size computation in AppendCommand.
	for _, n := range []int{9, 10, 99, 100, 12345} {
		s := make([]byte, n)
		for i := range s {
			s[i] = 'a' + byte(i%26)
		}
		got := AppendCommand(nil, string(s), "x")
		var d Decoder
		v, m, err := d.Decode(got)
		if err != nil || m != len(got) || v.Elems[0].Str != string(s) || v.Elems[1].Str != "x" {
			t.Fatalf("n=%d: %v, %d, %v", n, v.Type, m, err)
		}
		if len(got) != cap(got) && cap(got) > 2*len(got) {
			t.Errorf("n=%d: grew to cap %d for %d bytes", n, cap(got), len(got))
		}
	}
}

// evalsha appends the command the lock path sends most: EVALSHA with 2 keys and 3 args.
func evalsha(dst []byte) []byte {
	dst = AppendArrayLen(dst, 8)
	dst = AppendBulkString(dst, "EVALSHA")
	dst = AppendBulkString(dst, "8d6b1d4a2f0f4c3e9b2a1c0d7e6f5a4b3c2d1e0f")
	dst = AppendBulkInt(dst, 2)
	dst = AppendBulkString(dst, "{my-lock}")
	dst = AppendBulkString(dst, "redisson_lock__channel:{my-lock}")
	dst = AppendBulkInt(dst, 30000)
	dst = AppendBulkBytes(dst, []byte("1b1b8f7c-3c1e-4c5b-9a57-0e4c2f4b7d10:42"))
	return AppendBulkInt(dst, 0)
}

func TestEncodeWithRoomDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 512)
	args := []string{"EVALSHA", "8d6b1d4a2f0f4c3e9b2a1c0d7e6f5a4b3c2d1e0f", "2", "k1", "k2", "30000", "uuid:1", "0"}
	if a := testingAllocs(t, func() { buf = evalsha(buf[:0]) }); a != 0 {
		t.Errorf("EVALSHA with Append* functions: %v allocs, want 0", a)
	}
	if a := testingAllocs(t, func() { buf = AppendCommand(buf[:0], args...) }); a != 0 {
		t.Errorf("AppendCommand: %v allocs, want 0", a)
	}
	if a := testingAllocs(t, func() {
		buf = AppendValue(buf[:0], Value{Type: Integer, Int: 5})
	}); a != 0 {
		t.Errorf("AppendValue: %v allocs, want 0", a)
	}
}

func TestEncodeEvalshaDecodesToItsArguments(t *testing.T) {
	var d Decoder
	v, n, err := d.Decode(evalsha(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"EVALSHA", "8d6b1d4a2f0f4c3e9b2a1c0d7e6f5a4b3c2d1e0f", "2", "{my-lock}",
		"redisson_lock__channel:{my-lock}", "30000", "1b1b8f7c-3c1e-4c5b-9a57-0e4c2f4b7d10:42", "0"}
	if n != len(evalsha(nil)) || len(v.Elems) != len(want) {
		t.Fatalf("got %v", v)
	}
	for i, w := range want {
		if v.Elems[i].Type != BulkString || v.Elems[i].Str != w {
			t.Errorf("arg %d = %v, want %q", i, v.Elems[i], w)
		}
	}
}

package resp

import (
	"strconv"
	"strings"
	"testing"
)

// go test -run '^$' -bench . -benchmem ./resp

func BenchmarkEncodeEvalsha(b *testing.B) {
	b.Run("append-funcs", func(b *testing.B) {
		buf := make([]byte, 0, 512)
		b.ReportAllocs()
		for b.Loop() {
			buf = evalsha(buf[:0])
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("AppendCommand", func(b *testing.B) {
		buf := make([]byte, 0, 512)
		args := []string{"EVALSHA", "8d6b1d4a2f0f4c3e9b2a1c0d7e6f5a4b3c2d1e0f", "2", "{my-lock}",
			"redisson_lock__channel:{my-lock}", "30000", "1b1b8f7c-3c1e-4c5b-9a57-0e4c2f4b7d10:42", "0"}
		b.ReportAllocs()
		for b.Loop() {
			buf = AppendCommand(buf[:0], args...)
		}
		b.SetBytes(int64(len(buf)))
	})
	// A pipeline: 100 commands appended into one growing buffer, as a connection's outbound buffer is filled.
	b.Run("100-into-one-buffer", func(b *testing.B) {
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf = buf[:0]
			for range 100 {
				buf = evalsha(buf)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/command")
	})
}

var benchReplies = []struct {
	name string
	in   string
}{
	{"nil", "$-1\r\n"},
	{"integer", ":29998\r\n"},
	{"OK", "+OK\r\n"},
	{"bulk-uuid", string(AppendBulkString(nil, "1b1b8f7c-3c1e-4c5b-9a57-0e4c2f4b7d10:42"))},
	// The renewal batch's per-key result, and a fenced lock's [nil, token] reply.
	{"small-array", "*3\r\n:1\r\n:0\r\n:1\r\n"},
	{"array-nil-token", "*2\r\n$-1\r\n:12345\r\n"},
	{"pubsub-message", "*3\r\n$7\r\nmessage\r\n$32\r\nredisson_lock__channel:{my-lock}\r\n$1\r\n0\r\n"},
	{"NOSCRIPT", "-NOSCRIPT No matching script. Please use EVAL.\r\n"},
	{"hgetall-10-fields", hgetall(10)},
}

func hgetall(fields int) string {
	s := AppendArrayLen(nil, 2*fields)
	for i := range fields {
		s = AppendBulkString(s, "1b1b8f7c-3c1e-4c5b-9a57-0e4c2f4b7d10:"+strconv.Itoa(i))
		s = AppendBulkInt(s, int64(i))
	}
	return string(s)
}

func BenchmarkDecode(b *testing.B) {
	var d Decoder
	for _, r := range benchReplies {
		b.Run(r.name, func(b *testing.B) {
			buf := []byte(r.in)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := d.Decode(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// A read that holds 100 pipelined lock replies: decode them all.
	b.Run("pipeline-100-mixed", func(b *testing.B) {
		var buf []byte
		for i := range 100 {
			buf = append(buf, benchReplies[i%6].in...)
		}
		b.SetBytes(int64(len(buf)))
		b.ReportAllocs()
		for b.Loop() {
			for rest := buf; len(rest) > 0; {
				_, n, err := d.Decode(rest)
				if err != nil {
					b.Fatal(err)
				}
				rest = rest[n:]
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/reply")
	})
}

func BenchmarkScan(b *testing.B) {
	var d Decoder
	for _, r := range benchReplies {
		b.Run(r.name, func(b *testing.B) {
			buf := []byte(r.in)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Scan(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeIncomplete is what a transport pays when it calls Decode after a read that did not complete the
// frame: for a large bulk string only its header is looked at, whatever has arrived. The largest size is over the
// default limit, so the decoder is given room for it (a user who raised MaxBulkLen).
func BenchmarkDecodeIncomplete(b *testing.B) {
	d := Decoder{Limits: Limits{MaxBulkLen: 128 << 20}}
	for _, size := range []int{1 << 10, 1 << 20, 64 << 20} {
		frame := AppendBulkString(nil, strings.Repeat("x", size))
		buf := frame[:len(frame)-1]
		b.Run("bulk-"+strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := d.Decode(buf); err != ErrIncomplete {
					b.Fatal(err)
				}
			}
		})
	}
}

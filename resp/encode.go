package resp

import "strconv"

// The encoder appends to a caller-owned buffer and never fails: commands are built from known types, so there is
// nothing to validate. It uses strconv's append functions only (no fmt, no reflection) and allocates nothing when
// dst has room; when it has not, it grows dst once per call at most, by the exact size needed. Every function is
// safe for concurrent use on distinct buffers and does not block.

// AppendArrayLen appends an array header "*<n>\r\n". Follow it with exactly n values.
func AppendArrayLen(dst []byte, n int) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}

// AppendBulkString appends s as a bulk string "$<len>\r\n<s>\r\n". s may hold any bytes.
func AppendBulkString(dst []byte, s string) []byte {
	dst = grow(dst, bulkSize(len(s)))
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(s)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendBulkBytes appends b as a bulk string "$<len>\r\n<b>\r\n". A nil b is sent as an empty string, not as null.
func AppendBulkBytes(dst []byte, b []byte) []byte {
	dst = grow(dst, bulkSize(len(b)))
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(b)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// AppendBulkInt appends v in decimal as a bulk string ("$2\r\n42\r\n"): the form in which commands take numbers.
func AppendBulkInt(dst []byte, v int64) []byte {
	var digits [20]byte // len("-9223372036854775808")
	num := strconv.AppendInt(digits[:0], v, 10)
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(num)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, num...)
	return append(dst, '\r', '\n')
}

// AppendCommand appends a whole command: an array header followed by each argument as a bulk string. For
// arguments that are []byte or integers, use AppendArrayLen and the Append* functions instead.
func AppendCommand(dst []byte, args ...string) []byte {
	size := headerSize(len(args))
	for _, a := range args {
		size += bulkSize(len(a))
	}
	dst = grow(dst, size)
	dst = AppendArrayLen(dst, len(args))
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// AppendSimpleString appends "+<s>\r\n". s must not contain CR or LF (the format cannot carry them); use a bulk
// string for arbitrary bytes. Servers send simple strings; this exists for tests and fake servers.
func AppendSimpleString(dst []byte, s string) []byte {
	dst = append(dst, '+')
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendError appends an error reply "-<msg>\r\n". msg must not contain CR or LF. For tests and fake servers.
func AppendError(dst []byte, msg string) []byte {
	dst = append(dst, '-')
	dst = append(dst, msg...)
	return append(dst, '\r', '\n')
}

// AppendInteger appends an integer reply ":<v>\r\n". For tests and fake servers: commands send numbers with
// AppendBulkInt.
func AppendInteger(dst []byte, v int64) []byte {
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, v, 10)
	return append(dst, '\r', '\n')
}

// AppendNullBulk appends a null bulk string "$-1\r\n".
func AppendNullBulk(dst []byte) []byte {
	return append(dst, '$', '-', '1', '\r', '\n')
}

// AppendNullArray appends a null array "*-1\r\n".
func AppendNullArray(dst []byte) []byte {
	return append(dst, '*', '-', '1', '\r', '\n')
}

// AppendValue appends v in wire form. Every value produced by Decoder.Decode re-encodes to a frame that decodes
// to an equal value. AppendValue does not validate: a Type outside the five RESP2 types is written as that byte
// followed by Str and CRLF, and CR or LF inside a simple string or error is written as is, which lets a fake
// server in a test produce malformed frames on purpose.
func AppendValue(dst []byte, v Value) []byte {
	switch v.Type {
	case Integer:
		return AppendInteger(dst, v.Int)
	case BulkString:
		if v.Null {
			return AppendNullBulk(dst)
		}
		return AppendBulkString(dst, v.Str)
	case Array:
		if v.Null {
			return AppendNullArray(dst)
		}
		dst = AppendArrayLen(dst, len(v.Elems))
		for _, e := range v.Elems {
			dst = AppendValue(dst, e)
		}
		return dst
	}
	dst = append(dst, byte(v.Type))
	dst = append(dst, v.Str...)
	return append(dst, '\r', '\n')
}

// grow makes room for n more bytes with at most one allocation.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	nb := make([]byte, len(dst), len(dst)+n+cap(dst)) // at least double, as append would
	copy(nb, dst)
	return nb
}

// headerSize is the encoded size of a "*<n>\r\n" or "$<n>\r\n" header.
func headerSize(n int) int {
	return 3 + decimalLen(n)
}

// bulkSize is the encoded size of a bulk string of n bytes.
func bulkSize(n int) int {
	return headerSize(n) + n + 2
}

// decimalLen is the number of decimal digits of a non-negative n.
func decimalLen(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

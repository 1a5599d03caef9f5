package resp

import (
	"strconv"
	"strings"
)

// Type is a RESP2 type, named by the byte that starts its frame on the wire.
type Type byte

// The five RESP2 types.
const (
	SimpleString Type = '+' // a status line such as OK, PONG, QUEUED
	ErrorReply   Type = '-' // an error line such as NOSCRIPT No matching script
	Integer      Type = ':' // a signed 64-bit integer
	BulkString   Type = '$' // a binary-safe string, or null ($-1)
	Array        Type = '*' // a sequence of values, or null (*-1)
)

// String names the type in words, for messages.
func (t Type) String() string {
	switch t {
	case SimpleString:
		return "simple string"
	case ErrorReply:
		return "error"
	case Integer:
		return "integer"
	case BulkString:
		return "bulk string"
	case Array:
		return "array"
	}
	return "unknown type " + quoteByte(byte(t))
}

// Value is one decoded RESP2 reply. Values are plain data: safe to copy, to keep, and to read from many goroutines.
//
// Strings never alias the buffer that was decoded, so the caller may reuse that buffer at once. To keep decoding
// cheap, all strings of one frame share one allocation and all arrays of one frame share one []Value allocation: a
// value kept from a large reply keeps that reply's strings alive.
type Value struct {
	// Type is the reply's type.
	Type Type
	// Null reports a null bulk string ($-1) or a null array (*-1).
	Null bool
	// Int holds an Integer reply.
	Int int64
	// Str holds the text of a SimpleString, ErrorReply or BulkString reply: a copy, never the decoded buffer.
	Str string
	// Elems holds the elements of an Array reply: non-nil (possibly empty) unless Null.
	Elems []Value
}

// Err returns the reply as a *ServerError when it is an error reply, and nil for every other type. It does not
// block and allocates only for error replies.
func (v Value) Err() error {
	if v.Type != ErrorReply {
		return nil
	}
	return NewServerError(v.Str)
}

// AsInt64 returns an Integer reply, or a BulkString reply holding a decimal integer (as Lua scripts and HGET return
// numbers). It returns ErrNil for a null reply, the *ServerError for an error reply, and a *TypeError otherwise.
func (v Value) AsInt64() (int64, error) {
	switch v.Type {
	case Integer:
		return v.Int, nil
	case BulkString:
		if v.Null {
			return 0, ErrNil
		}
		n, err := strconv.ParseInt(v.Str, 10, 64)
		if err != nil {
			return 0, &TypeError{Want: "int64", Got: v.Type, Reason: "not a decimal 64-bit integer: " + strconv.Quote(clip(v.Str))}
		}
		return n, nil
	case ErrorReply:
		return 0, v.Err()
	case Array:
		if v.Null {
			return 0, ErrNil
		}
	}
	return 0, &TypeError{Want: "int64", Got: v.Type}
}

// AsString returns the text of a SimpleString or BulkString reply. It returns ErrNil for a null reply, the
// *ServerError for an error reply, and a *TypeError otherwise.
func (v Value) AsString() (string, error) {
	switch v.Type {
	case SimpleString:
		return v.Str, nil
	case BulkString, Array:
		if v.Null {
			return "", ErrNil
		}
		if v.Type == BulkString {
			return v.Str, nil
		}
	case ErrorReply:
		return "", v.Err()
	}
	return "", &TypeError{Want: "string", Got: v.Type}
}

// String renders the value for debugging and test failures, in the spirit of redis-cli: OK, (error) ERR ...,
// (integer) 1, "bulk", (nil), ["a", (integer) 2]. It is not a wire format.
func (v Value) String() string {
	var sb strings.Builder
	v.writeTo(&sb)
	return sb.String()
}

func (v Value) writeTo(sb *strings.Builder) {
	if v.Null {
		sb.WriteString("(nil)")
		return
	}
	switch v.Type {
	case SimpleString:
		sb.WriteString(v.Str)
	case ErrorReply:
		sb.WriteString("(error) ")
		sb.WriteString(v.Str)
	case Integer:
		sb.WriteString("(integer) ")
		sb.WriteString(strconv.FormatInt(v.Int, 10))
	case BulkString:
		sb.WriteString(strconv.Quote(v.Str))
	case Array:
		sb.WriteByte('[')
		for i, e := range v.Elems {
			if i > 0 {
				sb.WriteString(", ")
			}
			e.writeTo(sb)
		}
		sb.WriteByte(']')
	default:
		sb.WriteString("(" + v.Type.String() + ") ")
		sb.WriteString(strconv.Quote(v.Str))
	}
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

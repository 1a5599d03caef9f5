package resp

import (
	"errors"
	"strconv"
)

var (
	// ErrIncomplete is returned by Decoder.Decode and Decoder.Scan when the buffer does not yet hold one whole
	// frame. It is not a failure: nothing was consumed; append the next bytes read from the connection to the same
	// buffer and call again from the same start.
	ErrIncomplete = errors.New("resp: incomplete frame: append more bytes and decode again")

	// ErrNil is returned by Value.AsInt64 and Value.AsString when the reply is null ($-1 or *-1) where a value was
	// required, e.g. GET of a missing key. Test for it with errors.Is.
	ErrNil = errors.New("resp: nil reply")
)

// ProtocolError is returned by the Decoder when the bytes are not valid RESP2 or break a configured Limits. The
// byte stream cannot be resynchronised after one: the caller should close the connection.
type ProtocolError struct {
	// Offset is the index, in the buffer passed to Decode or Scan, of the byte at fault: the offending byte for
	// syntax errors, the first byte of the length for length values that are negative, too large or over a limit,
	// the type byte for an unknown type or an array nested too deep.
	Offset int
	// Reason says what is wrong, in words.
	Reason string
}

// Error reports the reason and the byte offset.
func (e *ProtocolError) Error() string {
	return "resp: protocol error at byte " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// ServerError is an error reply sent by the server ("-NOSCRIPT No matching script..."). It is a normal reply to one
// command, distinct from a ProtocolError: the connection stays usable. Callers branch on Prefix with errors.As.
type ServerError struct {
	// Prefix is the first word of Message when that word is an upper-case error code (an ASCII upper-case letter
	// followed by upper-case letters, digits or '_'): ERR, NOSCRIPT, MOVED, ASK, WRONGTYPE, LOADING, NOAUTH, BUSY,
	// TRYAGAIN, CLUSTERDOWN, READONLY, ... It is "" when the first word is anything else.
	Prefix string
	// Message is the whole error line without the leading '-' and the trailing CRLF.
	Message string
}

// NewServerError splits an error line (without '-' and CRLF) into Prefix and Message.
func NewServerError(msg string) *ServerError {
	return &ServerError{Prefix: errorPrefix(msg), Message: msg}
}

// Error returns the server's message, marked as coming from the server.
func (e *ServerError) Error() string {
	return "redis: " + e.Message
}

// errorPrefix returns the first word of msg when it is an upper-case error code, else "".
func errorPrefix(msg string) string {
	i := 0
	for ; i < len(msg) && msg[i] != ' '; i++ {
		c := msg[i]
		upper := c >= 'A' && c <= 'Z'
		if i == 0 && !upper {
			return ""
		}
		if !upper && !(c >= '0' && c <= '9') && c != '_' {
			return ""
		}
	}
	return msg[:i]
}

// TypeError is returned by the As* methods of Value when the reply's type or content cannot be converted to the
// requested Go type (for example AsInt64 of an array, or of a bulk string that is not a decimal integer).
type TypeError struct {
	// Want names the requested Go type: "int64" or "string".
	Want string
	// Got is the type of the reply.
	Got Type
	// Reason adds detail when the type alone does not explain the failure; it may be "".
	Reason string
}

// Error names the requested and the actual type.
func (e *TypeError) Error() string {
	s := "resp: cannot convert " + e.Got.String() + " reply to " + e.Want
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// protoErr builds a ProtocolError; it is only called on the error path, so the allocation does not matter.
func protoErr(offset int, reason string) *ProtocolError {
	return &ProtocolError{Offset: offset, Reason: reason}
}

// quoteByte renders one byte for an error message, e.g. "x", "\r" or "\xff".
func quoteByte(c byte) string {
	return strconv.Quote(string([]byte{c}))
}

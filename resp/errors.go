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
	// the first byte of a line too long, the type byte for an unknown type or an array nested too deep.
	Offset int
	// Reason says what is wrong, in words.
	Reason string
	// Limit is set when the bytes are valid RESP2 but break one of the Decoder's Limits: a larger limit would
	// have accepted them. errors.As finds it too.
	Limit *LimitError
}

// Error reports the reason and the byte offset.
func (e *ProtocolError) Error() string {
	return "resp: protocol error at byte " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// Unwrap returns Limit, if set, so that errors.As finds the *LimitError.
func (e *ProtocolError) Unwrap() error {
	if e.Limit == nil {
		return nil
	}
	return e.Limit
}

// LimitError says which of the Decoder's Limits a reply broke, and by how much. The Decoder returns it inside a
// *ProtocolError (its Limit field; errors.As finds it): the stream still cannot go on, but the reply was valid
// RESP2 that a larger limit would have accepted.
type LimitError struct {
	// Limit names the field of Limits: "MaxBulkLen", "MaxLineLen", "MaxArrayLen", "MaxReplyLen" or "MaxDepth".
	Limit string
	// Max is the limit's value (with the defaults applied).
	Max int64
	// Got is what the reply announced or reached: a bulk string's or an array's announced length, the elements
	// of the reply counted so far, the bytes a line or the reply takes at least (Max+1 or more when only the
	// bytes so far are known), the depth of nesting.
	Got int64
}

// Error names the limit, its value and what the reply needed.
func (e *LimitError) Error() string {
	var what string
	switch e.Limit {
	case "MaxBulkLen":
		what = "a bulk string of " + strconv.FormatInt(e.Got, 10) + " bytes"
	case "MaxLineLen":
		what = "a simple-string or error line of " + strconv.FormatInt(e.Got, 10) + " bytes or more"
	case "MaxArrayLen":
		what = "a reply of " + strconv.FormatInt(e.Got, 10) + " array elements or more"
	case "MaxReplyLen":
		what = "a reply of " + strconv.FormatInt(e.Got, 10) + " bytes or more"
	case "MaxDepth":
		what = "arrays nested " + strconv.FormatInt(e.Got, 10) + " deep"
	default:
		what = strconv.FormatInt(e.Got, 10)
	}
	return "resp: " + what + " is over Limits." + e.Limit + " (" + strconv.FormatInt(e.Max, 10) + ")"
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

// limitErr builds the ProtocolError of a reply over the limit named limit, on the error path only.
func limitErr(offset int, limit string, max, got int64) *ProtocolError {
	le := &LimitError{Limit: limit, Max: max, Got: got}
	return &ProtocolError{Offset: offset, Reason: le.Error()[len("resp: "):], Limit: le}
}

// quoteByte renders one byte for an error message, e.g. "x", "\r" or "\xff".
func quoteByte(c byte) string {
	return strconv.Quote(string([]byte{c}))
}

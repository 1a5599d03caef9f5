// Package resp is locksmith's RESP2 codec: the wire format between a client and redis-server.
//
// # Encoding
//
// Commands are appended to a caller-owned []byte (AppendCommand, or AppendArrayLen followed by AppendBulkString,
// AppendBulkBytes and AppendBulkInt), so that many goroutines' commands can share one outbound buffer per
// connection and be flushed in one write. The encoder uses no fmt and no reflection and allocates nothing when the
// buffer has room.
//
// # Decoding
//
// A Decoder parses from a byte slice that may end anywhere, which is how bytes come off a socket:
//
//	for {
//		v, n, err := dec.Decode(buf)
//		if errors.Is(err, resp.ErrIncomplete) {
//			break // read more, append to buf, call again
//		}
//		if err != nil {
//			return err // *ProtocolError: close the connection
//		}
//		deliver(v)
//		buf = buf[n:]
//	}
//
// Decode never consumes anything unless it returns a whole frame, so calling it after every read is safe. It works
// in two passes: the first validates the whole frame and measures it without allocating (Scan exposes it alone);
// only then is the Value built. Hence an incomplete frame costs no allocation, a large bulk string still arriving is
// recognised from its header in O(1), and nothing is ever allocated on the word of a length header before the bytes
// it announces are present. Limits bound bulk strings (8 MiB by default), simple-string and error lines (1 MiB),
// the array elements of a reply (262,144, nested ones included), the bytes of a whole reply (16 MiB) and nesting
// depth (32); each is checked as soon as the bytes show it broken (a length header, a line's bytes so far), so a
// caller never buffers more than MaxReplyLen of a reply that has not fully arrived, and Needed tells it how many
// bytes to wait for before decoding again. Anything malformed or over a limit is a *ProtocolError carrying the
// byte offset at fault; over a limit, its Limit field (a *LimitError, found by errors.As) names the limit. No
// input makes the decoder panic.
//
// Decoded strings are copies: the caller may reuse its read buffer as soon as Decode returns. A frame costs at most
// two allocations (one for all its strings, one for all its array elements); integers, nulls, OK/PONG/QUEUED and
// the pub/sub kind words cost none.
//
// # Errors
//
// An error reply from the server ("-NOSCRIPT ...") is an ordinary Value of Type ErrorReply; Value.Err and the As*
// accessors turn it into a *ServerError whose Prefix (NOSCRIPT, MOVED, WRONGTYPE, ...) callers branch on with
// errors.As. A *ProtocolError means the byte stream itself is broken. ErrNil reports a null reply where a value was
// required; a *TypeError a reply of the wrong type.
//
// RESP3 is out of scope: the project speaks RESP2 (no HELLO 3), which every Redis version and Redisson understand.
package resp

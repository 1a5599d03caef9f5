package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Kind is the RESP2 type of a Reply.
type Kind uint8

// Reply kinds.
const (
	KindNil    Kind = iota // null bulk string or null array
	KindStatus             // simple string: +OK
	KindError              // error reply: -ERR ...
	KindInt                // integer: :1
	KindBulk               // bulk string: $3\r\nfoo
	KindArray              // array: *2\r\n...
)

// Reply is one decoded RESP2 reply, shaped for test assertions.
type Reply struct {
	Kind  Kind
	Str   string  // KindStatus, KindError (without '-') and KindBulk
	Int   int64   // KindInt
	Array []Reply // KindArray
}

// String renders the reply compactly, for test failure messages.
func (r Reply) String() string {
	switch r.Kind {
	case KindNil:
		return "(nil)"
	case KindStatus:
		return r.Str
	case KindError:
		return "(error) " + r.Str
	case KindInt:
		return "(integer) " + strconv.FormatInt(r.Int, 10)
	case KindBulk:
		return strconv.Quote(r.Str)
	case KindArray:
		parts := make([]string, len(r.Array))
		for i, e := range r.Array {
			parts[i] = e.String()
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("(kind %d)", r.Kind)
}

// Strings returns the elements of an array reply as strings (nil elements as
// ""), or ErrUnexpectedReply for another kind or a nested array.
func (r Reply) Strings() ([]string, error) {
	if r.Kind == KindNil {
		return nil, nil
	}
	if r.Kind != KindArray {
		return nil, fmt.Errorf("%w: want array, got %s", ErrUnexpectedReply, r)
	}
	out := make([]string, len(r.Array))
	for i, e := range r.Array {
		switch e.Kind {
		case KindBulk, KindStatus:
			out[i] = e.Str
		case KindInt:
			out[i] = strconv.FormatInt(e.Int, 10)
		case KindNil:
		default:
			return nil, fmt.Errorf("%w: element %d is %s", ErrUnexpectedReply, i, e)
		}
	}
	return out, nil
}

// Limits on what the admin client accepts: far above anything a test reads,
// low enough that a corrupt length cannot make it allocate gigabytes.
const (
	maxBulkLen  = 64 << 20
	maxArrayLen = 1 << 20
	maxDepth    = 32
)

var errProtocol = errors.New("redistest: protocol error in reply")

// readReply decodes one RESP2 reply from r.
func readReply(r *bufio.Reader, depth int) (Reply, error) {
	if depth > maxDepth {
		return Reply{}, fmt.Errorf("%w: nesting deeper than %d", errProtocol, maxDepth)
	}
	line, err := readLine(r)
	if err != nil {
		return Reply{}, err
	}
	if len(line) == 0 {
		return Reply{}, fmt.Errorf("%w: empty line", errProtocol)
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return Reply{Kind: KindStatus, Str: body}, nil
	case '-':
		return Reply{Kind: KindError, Str: body}, nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return Reply{}, fmt.Errorf("%w: integer %q", errProtocol, body)
		}
		return Reply{Kind: KindInt, Int: n}, nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > maxBulkLen {
			return Reply{}, fmt.Errorf("%w: bulk length %q", errProtocol, body)
		}
		if n == -1 {
			return Reply{Kind: KindNil}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return Reply{}, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return Reply{}, fmt.Errorf("%w: bulk not terminated by CRLF", errProtocol)
		}
		return Reply{Kind: KindBulk, Str: string(buf[:n])}, nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > maxArrayLen {
			return Reply{}, fmt.Errorf("%w: array length %q", errProtocol, body)
		}
		if n == -1 {
			return Reply{Kind: KindNil}, nil
		}
		arr := make([]Reply, n)
		for i := range arr {
			if arr[i], err = readReply(r, depth+1); err != nil {
				return Reply{}, err
			}
		}
		return Reply{Kind: KindArray, Array: arr}, nil
	}
	return Reply{}, fmt.Errorf("%w: unknown type byte %q", errProtocol, line[0])
}

// readLine reads up to CRLF and returns the line without it.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return "", fmt.Errorf("%w: line not terminated by CRLF", errProtocol)
	}
	return line[:len(line)-2], nil
}

// appendCommand encodes args as a RESP2 array of bulk strings.
func appendCommand(dst []byte, args []string) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

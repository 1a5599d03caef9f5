package conn

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/resp"
)

// handshakeStep is one command of the handshake, in the order they are sent.
type handshakeStep uint8

const (
	stepAuth handshakeStep = iota
	stepSelect
	stepSetName
	stepPing
	stepRole
)

// String names the step as HandshakeError.Step does.
func (s handshakeStep) String() string {
	switch s {
	case stepAuth:
		return "AUTH"
	case stepSelect:
		return "SELECT"
	case stepSetName:
		return "CLIENT SETNAME"
	case stepPing:
		return "PING"
	case stepRole:
		return "ROLE"
	}
	return "step " + strconv.Itoa(int(s))
}

// want describes the only answer the step accepts, for messages.
func (s handshakeStep) want() string {
	switch s {
	case stepPing:
		return "+PONG"
	case stepRole:
		return "a ROLE array"
	}
	return "+OK"
}

// maxHandshakeReply bounds each reply of the handshake, and so the read buffer of a connection attempt. The
// longest legitimate one is ROLE's on a master, a few dozen bytes per replica; anything longer is a broken or
// hostile peer, refused before more of it is read.
const maxHandshakeReply = 64 << 10

// maxQuotedReply is how much of an unexpected reply a HandshakeError quotes.
const maxQuotedReply = 128

// handshakeLimits bounds each reply of the handshake, whole, to maxHandshakeReply.
var handshakeLimits = resp.Limits{
	MaxBulkLen:  maxHandshakeReply,
	MaxLineLen:  maxHandshakeReply,
	MaxArrayLen: 4096,
	MaxReplyLen: maxHandshakeReply,
	MaxDepth:    4,
}

// handshake is one connection's handshake: the commands it sent and the replies still due. Its zero value is not
// usable; newHandshake builds it. Not safe for concurrent use (one dial goroutine owns it).
type handshake struct {
	steps []handshakeStep
	next  int // index in steps of the reply to read next
	dec   resp.Decoder
}

// newHandshake returns the handshake for cfg and the commands to send, in one buffer: AUTH (when credentials are
// configured), SELECT (DB other than 0), CLIENT SETNAME (ClientName set), PING, and ROLE when master is set.
func newHandshake(cfg *Config, master bool) (*handshake, []byte) {
	h := &handshake{dec: resp.Decoder{Limits: handshakeLimits}}
	var buf []byte
	if cfg.Password != "" || cfg.Username != "" {
		if cfg.Username != "" {
			buf = resp.AppendCommand(buf, "AUTH", cfg.Username, cfg.Password)
		} else {
			buf = resp.AppendCommand(buf, "AUTH", cfg.Password)
		}
		h.steps = append(h.steps, stepAuth)
	}
	if cfg.DB != 0 {
		buf = resp.AppendCommand(buf, "SELECT", strconv.Itoa(cfg.DB))
		h.steps = append(h.steps, stepSelect)
	}
	if cfg.ClientName != "" {
		buf = resp.AppendCommand(buf, "CLIENT", "SETNAME", cfg.ClientName)
		h.steps = append(h.steps, stepSetName)
	}
	buf = appendPing(buf)
	h.steps = append(h.steps, stepPing)
	if master {
		buf = resp.AppendCommand(buf, "ROLE")
		h.steps = append(h.steps, stepRole)
	}
	return h, buf
}

// feed checks the replies at the start of data, in order, and returns how many bytes they took and whether every
// step has now been answered; the caller keeps the rest of data and calls again with more bytes appended. The
// first wrong answer ends the handshake with a *HandshakeError: an error reply, a reply of another kind than the
// step's, bytes that are not RESP2, or a reply over maxHandshakeReply (reported as soon as that is certain,
// without waiting for the rest of it). It never panics and never keeps data.
func (h *handshake) feed(data []byte) (int, bool, error) {
	off := 0
	for h.next < len(h.steps) {
		step := h.steps[h.next]
		v, n, err := h.dec.Decode(data[off:])
		if errors.Is(err, resp.ErrIncomplete) {
			return off, false, nil
		}
		if err != nil {
			return off, false, handshakeError(step, data[off:], err, nil)
		}
		if err := check(step, &v, data[off:off+n]); err != nil {
			return off, false, err
		}
		off += n
		h.next++
	}
	return off, true, nil
}

// check returns the error of a reply that is not the step's answer, or nil.
func check(step handshakeStep, v *resp.Value, raw []byte) error {
	if v.Type == resp.ErrorReply {
		se := v.Err().(*resp.ServerError)
		return handshakeError(step, raw, se, refusalKind(step, se))
	}
	switch step {
	case stepAuth, stepSelect, stepSetName:
		if v.Type == resp.SimpleString && v.Str == "OK" {
			return nil
		}
	case stepPing:
		if v.Type == resp.SimpleString && v.Str == "PONG" {
			return nil
		}
	case stepRole:
		if v.Type == resp.Array && len(v.Elems) > 0 && v.Elems[0].Type == resp.BulkString {
			if v.Elems[0].Str == "master" {
				return nil
			}
			return handshakeError(step, raw, nil, ErrNotMaster)
		}
	}
	return handshakeError(step, raw, nil, nil)
}

// refusalKind says what an error reply to a handshake step means: ErrAuth when the server refused the credentials
// or a permission the handshake needs, ErrInvalidConfig when it refused the database or the client name, nil for
// conditions that pass (LOADING, max clients reached, MASTERDOWN, BUSY...). Redis names most of them by prefix;
// the others only by their text, matched here as Redis 5 to 7 word them.
func refusalKind(step handshakeStep, se *resp.ServerError) error {
	msg := se.Message
	switch {
	case strings.Contains(msg, "max number of clients reached"):
		return nil // sent to a new connection before any reply, whatever the step
	case se.Prefix == "WRONGPASS", se.Prefix == "NOAUTH", se.Prefix == "NOPERM":
		return ErrAuth
	case strings.Contains(msg, "without any password configured"), // Redis 6+: AUTH with no requirepass
		strings.Contains(msg, "but no password is set"), // Redis 5 and older: the same
		strings.HasPrefix(msg, "ERR invalid password"):  // Redis 5 and older: WRONGPASS
		return ErrAuth
	case step == stepAuth && se.Prefix == "ERR":
		// "wrong number of arguments": a username sent to a server older than Redis 6, which has no ACL.
		return ErrAuth
	case step == stepSelect && se.Prefix == "ERR":
		// "DB index is out of range", "SELECT is not allowed in cluster mode".
		return ErrInvalidConfig
	case step == stepSetName && se.Prefix == "ERR":
		// "Client names cannot contain spaces, newlines or special characters."
		return ErrInvalidConfig
	}
	return nil
}

// handshakeError builds the error of step from the reply's bytes (quoted, truncated), its cause and its kind.
func handshakeError(step handshakeStep, raw []byte, cause, kind error) *HandshakeError {
	e := &HandshakeError{Step: step.String(), Reply: quoteReply(raw), Err: cause, want: step.want(), kind: kind}
	if len(raw) > 0 {
		e.lead = raw[0]
	}
	return e
}

// quoteReply renders the start of a reply for a message: at most maxQuotedReply bytes, quoted with every control
// and non-ASCII byte escaped (a hostile reply cannot forge log lines), with the total length when cut.
func quoteReply(raw []byte) string {
	if len(raw) <= maxQuotedReply {
		return strconv.QuoteToASCII(string(raw))
	}
	return strconv.QuoteToASCII(string(raw[:maxQuotedReply])) + "... (" + strconv.Itoa(len(raw)) + " bytes so far)"
}

// HandshakeError is the cause (inside the *ConnError of a connection attempt, Op "handshake") of a handshake that
// did not get the answer each step must get. The handshake is AUTH (when credentials are configured), SELECT (DB
// other than 0), CLIENT SETNAME (ClientName set), PING and, on a Sentinel Client's data connections, ROLE: sent in
// one write after connecting, each reply checked in order, the whole bounded by Config.DialTimeout and each reply
// by 64 KiB.
//
// It matches (errors.Is) ErrAuth when the server refused the credentials or a permission the handshake needs,
// ErrInvalidConfig when it refused the database or the client name, ErrNotMaster when ROLE did not say master; the
// error of the attempt then does not match ErrUnavailable. Otherwise (a wrong, malformed or oversized answer, or an
// error such as LOADING) the attempt failed like an unreachable server: ErrUnavailable, retried with backoff.
type HandshakeError struct {
	// Step is the command whose reply was wrong: "AUTH", "SELECT", "CLIENT SETNAME", "PING" or "ROLE".
	Step string
	// Reply is the start of what came back, quoted: at most 128 bytes, control and non-ASCII bytes escaped.
	Reply string
	// Err is the cause: the server's *resp.ServerError for an error reply, a *resp.ProtocolError for bytes that
	// are not RESP2 or a reply over the handshake's limit (a *resp.LimitError then), nil for a well-formed reply
	// that is not the step's answer.
	Err error

	want string // the step's answer, for the message
	kind error  // ErrAuth, ErrInvalidConfig, ErrNotMaster, or nil
	lead byte   // the reply's first byte (0 if none): a TLS record's type tells a TLS server
}

// Error names the step, what came back, and what to do about a refusal.
func (e *HandshakeError) Error() string {
	var sb strings.Builder
	sb.WriteString("conn: handshake ")
	sb.WriteString(e.Step)
	var se *resp.ServerError
	var le *resp.LimitError
	switch {
	case errors.As(e.Err, &le):
		sb.WriteString(": reply ")
		sb.WriteString(e.Reply)
		sb.WriteString(" over the handshake's limit of ")
		sb.WriteString(strconv.Itoa(maxHandshakeReply >> 10))
		sb.WriteString(" KiB (")
		sb.WriteString(le.Error())
		sb.WriteString(")")
	case errors.As(e.Err, &se):
		sb.WriteString(" refused: ")
		sb.WriteString(strconv.QuoteToASCII(se.Message))
	case e.Err != nil:
		sb.WriteString(": unreadable reply ")
		sb.WriteString(e.Reply)
		sb.WriteString(": ")
		sb.WriteString(e.Err.Error())
	default:
		sb.WriteString(": got ")
		sb.WriteString(e.Reply)
		sb.WriteString(", want ")
		sb.WriteString(e.want)
	}
	switch e.kind {
	case ErrAuth:
		sb.WriteString(" (")
		sb.WriteString(ErrAuth.Error())
		sb.WriteString(")")
	case ErrInvalidConfig:
		sb.WriteString(" (")
		sb.WriteString(ErrInvalidConfig.Error())
		sb.WriteString(": the server refused Config.")
		if e.Step == stepSelect.String() {
			sb.WriteString("DB")
		} else {
			sb.WriteString("ClientName")
		}
		sb.WriteString(")")
	case ErrNotMaster:
		sb.WriteString(" (")
		sb.WriteString(ErrNotMaster.Error())
		sb.WriteString(")")
	}
	return sb.String()
}

// Unwrap returns the kind sentinel, if any, and the cause, so that errors.Is and errors.As see both.
func (e *HandshakeError) Unwrap() []error {
	var out []error
	if e.kind != nil {
		out = append(out, e.kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// runHandshake sends the handshake on nc and checks every reply, all within ctx (the attempt's DialTimeout). It
// blocks; it runs on the dial goroutine before the connection is given to a transport. The read buffer never
// grows past one reply's limit plus one read.
func runHandshake(ctx context.Context, nc net.Conn, cfg *Config, master bool) error {
	h, out := newHandshake(cfg, master)
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) }) // cancellation unblocks I/O
	defer stop()
	if _, err := nc.Write(out); err != nil {
		// A TLS server that refused the client's certificate has sent an alert and closed: the alert, still
		// readable, says why the write failed.
		if _, isTLS := nc.(*tls.Conn); isTLS {
			if _, rerr := nc.Read(make([]byte, 64)); rerr != nil && strings.Contains(rerr.Error(), "remote error") {
				return rerr
			}
		}
		return ctxOr(ctx, err)
	}
	rbuf := make([]byte, 0, 512)
	for {
		n, done, err := h.feed(rbuf)
		if err != nil {
			return err
		}
		if done {
			break
		}
		rbuf = rbuf[:copy(rbuf, rbuf[n:])]
		if len(rbuf) > maxHandshakeReply+maxIntegerLine {
			return errPartialTooLong // cannot happen: see below
		}
		if len(rbuf) == cap(rbuf) {
			// The decoder refuses a reply longer than maxHandshakeReply (plus one integer line) as soon as the
			// bytes show it, so the buffer, which holds one incomplete reply, never needs more.
			grown := make([]byte, len(rbuf), min(2*cap(rbuf), maxHandshakeReply+maxIntegerLine+1))
			copy(grown, rbuf)
			rbuf = grown
		}
		m, err := nc.Read(rbuf[len(rbuf):cap(rbuf)])
		rbuf = rbuf[:len(rbuf)+m]
		if err != nil && m == 0 {
			return readFailure(ctx, h, rbuf, err)
		}
	}
	return nc.SetDeadline(time.Time{})
}

// readFailure is the error of a handshake whose read failed: the context's when it ended, else the read error,
// with the partial reply named when bytes of one had come.
func readFailure(ctx context.Context, h *handshake, partial []byte, err error) error {
	err = ctxOr(ctx, err)
	if len(partial) > 0 && h.next < len(h.steps) {
		return handshakeError(h.steps[h.next], partial, err, nil)
	}
	return err
}

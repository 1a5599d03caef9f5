package conn

import (
	"context"
	"errors"
	"strings"
)

var (
	// ErrClosed is returned when the Client has been closed: by every command issued after Close, and by every
	// command that was still pending when Close was called. Create a new Client to go on.
	ErrClosed = errors.New("conn: client closed")

	// ErrConnLost is matched (errors.Is) by the *ConnError of a command whose connection dropped, was reset after a
	// response timeout, or broke the protocol while the command was queued or in flight. The command may or may not
	// have run on the server: do not resend a non-idempotent command blindly.
	ErrConnLost = errors.New("conn: connection lost; the command may or may not have run on the server")

	// ErrUnavailable is matched (errors.Is) by the *ConnError of a command that was never sent because no
	// connection to its server was up: the server is unreachable (the last connection attempt failed and the next
	// one is scheduled with backoff) or a connection attempt in progress failed. It is safe to retry later.
	ErrUnavailable = errors.New("conn: server unavailable; the command was not sent, retry later")

	// ErrTimeout is matched (errors.Is) by the *ConnError of the commands of a connection reset because a reply did
	// not come within Config.ResponseTimeout. Such an error also matches context.DeadlineExceeded and reports
	// Timeout() == true.
	ErrTimeout = errors.New("conn: no reply within the response timeout; the connection was reset")

	// ErrUnexpectedReply is the cause (inside a *ConnError) when the server sent a reply that no command was
	// waiting for: the stream cannot be trusted any more, so the connection is reset.
	ErrUnexpectedReply = errors.New("conn: reply with no command waiting for it")

	// ErrInvalidConfig is matched (errors.Is) by every error New and ParseURL return for a bad Config or URL; the
	// message names the field or option at fault.
	ErrInvalidConfig = errors.New("conn: invalid configuration")

	// ErrEmptyCommand is returned (as the future's error) by Do and Pipeline for a command with no arguments and no
	// script, and by Eval without a script: Redis would silently ignore an empty command and the pipeline would
	// lose its step. Pass the command name first.
	ErrEmptyCommand = errors.New("conn: empty command; pass the command name and its arguments, or a Script")
)

// ConnError is the error of a command that failed because of its connection rather than because of the server's
// reply: the connection could not be established, dropped, was reset after a response timeout, or received bytes
// that are not RESP2. It matches ErrConnLost (the command may have run) or ErrUnavailable (it was never sent) with
// errors.Is, and its cause with errors.Is / errors.As (a *resp.ProtocolError, a net.Error, io.EOF, ErrTimeout...).
type ConnError struct {
	// Addr is the server's host:port.
	Addr string
	// Op says what failed: "dial", "handshake", "read", "write", "protocol", "timeout" or "connect" (no
	// connection was up when the command was issued).
	Op string
	// Err is the cause.
	Err error

	kind error // ErrConnLost or ErrUnavailable
}

// Error describes the failure, its server and its cause.
func (e *ConnError) Error() string {
	var sb strings.Builder
	if e.kind == ErrUnavailable {
		sb.WriteString("conn: server unavailable (")
	} else {
		sb.WriteString("conn: connection lost (")
	}
	sb.WriteString(e.Op)
	sb.WriteString(" ")
	sb.WriteString(e.Addr)
	sb.WriteString(")")
	if e.Err != nil {
		sb.WriteString(": ")
		sb.WriteString(e.Err.Error())
	}
	return sb.String()
}

// Unwrap returns the kind sentinel (ErrConnLost or ErrUnavailable) and the cause, so that errors.Is and errors.As
// see both.
func (e *ConnError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.Err}
}

// Is makes a response-timeout error match context.DeadlineExceeded.
func (e *ConnError) Is(target error) bool {
	return target == context.DeadlineExceeded && errors.Is(e.Err, ErrTimeout)
}

// Timeout reports whether the connection was reset because a reply did not come within the response timeout, or
// the cause is itself a timeout (a dial timeout).
func (e *ConnError) Timeout() bool {
	if errors.Is(e.Err, ErrTimeout) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(e.Err, &t) && t.Timeout()
}

// lostError builds the error of commands that were queued or in flight on a connection that failed.
func lostError(addr, op string, cause error) *ConnError {
	return &ConnError{Addr: addr, Op: op, Err: cause, kind: ErrConnLost}
}

// unavailableError builds the error of a command that was never sent.
func unavailableError(addr, op string, cause error) *ConnError {
	return &ConnError{Addr: addr, Op: op, Err: cause, kind: ErrUnavailable}
}

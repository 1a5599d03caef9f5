package conn

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/locksmith-go/locksmith/resp"
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

	// ErrAuth is matched (errors.Is) by the error of New, of a connection attempt, and of the commands that found
	// no connection because of it, when the server refused the connection's credentials or a permission its
	// handshake needs: WRONGPASS (a wrong username or password, or a disabled user), NOAUTH (the server requires a
	// password and none is configured), "AUTH <password> called without any password configured" (a password is
	// configured and the server needs none), or NOPERM for AUTH, SELECT, CLIENT SETNAME, PING or ROLE, or, from a
	// cluster, for both CLUSTER SHARDS and CLUSTER SLOTS (the slot map). It does not match ErrUnavailable: retrying
	// will not help. Fix Config.Username and Config.Password (the URL's user info) or the server's ACL (the user
	// needs +ping, +select and +client|setname for what the Config sends, and +cluster|shards or +cluster|slots
	// on a cluster: see docs/acl.md). The server's reply is a *resp.ServerError (errors.As), inside a
	// *HandshakeError for a handshake step. A Client whose server starts
	// refusing it keeps trying, but only every Config.ReconnectMaxBackoff, so a fixed ACL is picked up without a
	// restart; commands meanwhile fail at once with this error.
	ErrAuth = errors.New("conn: the server refused the credentials or a permission the connection needs; " +
		"fix Config.Username/Password (the URL's user info) or the user's ACL on the server")

	// ErrTimeout is matched (errors.Is) by the *ConnError of the commands of a connection reset because a reply did
	// not come within Config.ResponseTimeout. Such an error also matches context.DeadlineExceeded and reports
	// Timeout() == true.
	ErrTimeout = errors.New("conn: no reply within the response timeout; the connection was reset")

	// ErrUnexpectedReply is the cause (inside a *ConnError) when the server sent a reply that no command was
	// waiting for: the stream cannot be trusted any more, so the connection is reset.
	ErrUnexpectedReply = errors.New("conn: reply with no command waiting for it")

	// ErrInvalidConfig is matched (errors.Is) by every error New and ParseURL return for a bad Config or URL; the
	// message names the field or option at fault. It is also matched by the error of a connection attempt that
	// shows the Config cannot work with the server: a database index the server refuses (SELECT: "DB index is out
	// of range"), a client name it refuses, or TLS against a server that answers in plain RESP (rediss:// on a
	// plaintext port) and the reverse; that error does not match ErrUnavailable. Fix the Config or the URL.
	ErrInvalidConfig = errors.New("conn: invalid configuration")

	// ErrEmptyCommand is returned (as the future's error) by Do and Pipeline for a command with no arguments and no
	// script, and by Eval without a script: Redis would silently ignore an empty command and the pipeline would
	// lose its step. Pass the command name first.
	ErrEmptyCommand = errors.New("conn: empty command; pass the command name and its arguments, or a Script")

	// ErrNotMaster is the cause (inside a *ConnError matching ErrUnavailable) when a Sentinel Client's connection
	// found a server whose ROLE is not master: a Sentinel's stale answer, or an old master demoted meanwhile. The
	// Client asks the Sentinels again; commands issued meanwhile are retried within Config.RetryTimeout.
	ErrNotMaster = errors.New("conn: the server is not a master; asking the Sentinels for the current one")

	// ErrMasterSwitched is the cause (inside a *ConnError matching ErrConnLost) of the commands that were in flight
	// on the old master when a Sentinel Client moved to a new one (+switch-master, or a Sentinel answer): they may
	// or may not have run on the old master, and writes acknowledged there can be lost by the failover.
	ErrMasterSwitched = errors.New("conn: the master changed (Sentinel failover) while the command was in flight")

	// ErrNodeRemoved is the cause (inside a *ConnError matching ErrConnLost) of the commands still in flight on a
	// cluster node when a topology refresh found it serving no slot any more (failed, or demoted to replica).
	ErrNodeRemoved = errors.New("conn: the cluster node left the slot map while the command was in flight")

	// ErrCrossSlot is matched (errors.Is) by the *CrossSlotError of a cluster command whose keys hash to different
	// slots. A command runs on one node, so all its keys need one slot: give them one hash tag ("{order:1}:a",
	// "{order:1}:b"); see KeySlot.
	ErrCrossSlot = errors.New("conn: the command's keys are in different hash slots; give them one hash tag")

	// ErrCrossNode is returned (as every future's error) by Pipeline on a cluster Client when its commands' keys
	// are served by different nodes: a pipeline goes on one connection. Split it per node, or use one hash tag.
	ErrCrossNode = errors.New("conn: Pipeline commands route to different cluster nodes; split the pipeline or use one hash tag")

	// ErrBadWait is returned by SendAndWait for replicas below 1 or a timeout outside [1 ms, ResponseTimeout): WAIT
	// with timeout 0 would block its connection forever, and one longer than the response timeout would get the
	// connection reset.
	ErrBadWait = errors.New("conn: SendAndWait needs replicas >= 1 and 1 ms <= timeout < Config.ResponseTimeout")

	// ErrWaitUnsupported is the WaitResult.WaitErr of SendAndWait when the server (or a proxy in front of it)
	// does not know WAIT: detected once from its "unknown command" reply, logged once, and from then on WAIT is
	// not sent. The command itself ran normally; only the replica acknowledgement is unknown.
	ErrWaitUnsupported = errors.New("conn: the server does not support WAIT; replica acknowledgement is not checked")
)

// CrossSlotError is the error of a cluster command whose keys are not all in one hash slot. The Client detects it
// before sending when it knows the keys (Eval, Cmd.Keys); for other commands it is the server's CROSSSLOT reply,
// kept in Reply. It matches ErrCrossSlot with errors.Is, and the server's *resp.ServerError with errors.As when
// the server sent one.
type CrossSlotError struct {
	// Keys are the first two keys found in different slots ("" when the server detected it).
	Keys [2]string
	// Slots are their slots.
	Slots [2]int
	// Reply is the server's CROSSSLOT error, or nil when the Client caught it before sending.
	Reply error
}

// Error says which keys differ and what to do.
func (e *CrossSlotError) Error() string {
	if e.Reply != nil {
		return ErrCrossSlot.Error() + " (" + e.Reply.Error() + ")"
	}
	return ErrCrossSlot.Error() + " (" + strconv.Quote(e.Keys[0]) + " is in slot " + strconv.Itoa(e.Slots[0]) + ", " +
		strconv.Quote(e.Keys[1]) + " in slot " + strconv.Itoa(e.Slots[1]) + ")"
}

// Unwrap returns ErrCrossSlot and, when the server replied, its *resp.ServerError.
func (e *CrossSlotError) Unwrap() []error {
	if e.Reply == nil {
		return []error{ErrCrossSlot}
	}
	return []error{ErrCrossSlot, e.Reply}
}

// ConnError is the error of a command that failed because of its connection rather than because of the server's
// reply: the connection could not be established, dropped, was reset after a response timeout, or received bytes
// that are not RESP2. It matches ErrConnLost (the command may have run) or ErrUnavailable (it was never sent) with
// errors.Is, and its cause with errors.Is / errors.As (a *resp.ProtocolError, a net.Error, io.EOF, ErrTimeout, a
// *HandshakeError...). When the server refused the connection itself — its credentials (ErrAuth) or its
// configuration (ErrInvalidConfig) — it matches that instead of ErrUnavailable: waiting will not help.
type ConnError struct {
	// Addr is the server's host:port.
	Addr string
	// Op says what failed: "dial", "handshake", "read", "write", "protocol", "timeout", "connect" (no
	// connection was up when the command was issued), "cluster" (no cluster node gave the slot map), "failover"
	// (a Sentinel Client moved to a new master) or "removed" (a cluster node left the slot map).
	Op string
	// Err is the cause.
	Err error

	kind error // ErrConnLost, ErrUnavailable, or nil when the server refused the connection (see refused)
}

// Error describes the failure, its server and its cause.
func (e *ConnError) Error() string {
	var sb strings.Builder
	switch e.kind {
	case ErrUnavailable:
		sb.WriteString("conn: server unavailable (")
	case ErrConnLost:
		sb.WriteString("conn: connection lost (")
	default:
		sb.WriteString("conn: the server refused the connection (")
	}
	sb.WriteString(e.Op)
	if e.Addr != "" {
		sb.WriteString(" ")
		sb.WriteString(e.Addr)
	}
	sb.WriteString(")")
	if e.Err != nil {
		sb.WriteString(": ")
		sb.WriteString(e.Err.Error())
	}
	var le *resp.LimitError
	var he *HandshakeError
	if errors.As(e.Err, &le) && !errors.As(e.Err, &he) { // the handshake's limits are fixed
		sb.WriteString("; to accept such replies, raise Config.Limits.")
		sb.WriteString(le.Limit)
		if opt := limitOption(le.Limit); opt != "" {
			sb.WriteString(" (URL option ")
			sb.WriteString(opt)
			sb.WriteString(")")
		}
	}
	return sb.String()
}

// limitOption returns the URL option that sets the resp.Limits field named limit, or "".
func limitOption(limit string) string {
	switch limit {
	case "MaxBulkLen":
		return "max_bulk_len"
	case "MaxLineLen":
		return "max_line_len"
	case "MaxArrayLen":
		return "max_array_len"
	case "MaxReplyLen":
		return "max_reply_len"
	}
	return ""
}

// Unwrap returns the kind sentinel (ErrConnLost or ErrUnavailable, none for a refusal) and the cause, so that
// errors.Is and errors.As see both.
func (e *ConnError) Unwrap() []error {
	switch {
	case e.kind == nil:
		return []error{e.Err}
	case e.Err == nil:
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

// unavailableError builds the error of a command that was never sent, and of a failed connection attempt: it
// matches ErrUnavailable, unless the server refused the connection's configuration (see refused).
func unavailableError(addr, op string, cause error) *ConnError {
	if refused(cause) {
		return &ConnError{Addr: addr, Op: op, Err: cause}
	}
	return &ConnError{Addr: addr, Op: op, Err: cause, kind: ErrUnavailable}
}

// refused reports whether a connection attempt failed because the server refused its credentials or its
// configuration: nothing will change until someone fixes one or the other, so it is not reported as unavailable
// and not retried on the short backoff of a transient failure.
func refused(err error) bool {
	return err != nil && (errors.Is(err, ErrAuth) || errors.Is(err, ErrInvalidConfig))
}

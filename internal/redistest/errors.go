package redistest

import (
	"errors"
	"fmt"
)

var (
	// ErrNotInstalled is returned when redis-server (or redis-cli, for a
	// cluster) is not found in PATH.
	ErrNotInstalled = errors.New("redistest: redis-server not found in PATH: install it with `apt-get install -y redis-server` (or run `make deps` at the repository root)")

	// ErrClosed is returned when a method is called on a Server after Close.
	ErrClosed = errors.New("redistest: server is closed")

	// ErrNotRunning is returned when an operation needs a running process
	// (Pid, Pause, Resume) and the server was killed or stopped.
	ErrNotRunning = errors.New("redistest: server process is not running (call Restart)")

	// ErrNil is returned by the typed Do helpers (DoString, DoInt) when the
	// server answered with a nil reply.
	ErrNil = errors.New("redistest: nil reply")

	// ErrUnexpectedReply is returned by the typed Do helpers when the reply has
	// another type than the helper expects; use Do to see the raw reply.
	ErrUnexpectedReply = errors.New("redistest: unexpected reply type")
)

// StartError is returned when a redis-server process does not start or does not
// answer PING within the start bound. Log holds the tail of its log file,
// which usually names the cause (a bad config directive, a port in use).
type StartError struct {
	Addr    string // loopback address the server was meant to listen on
	Dir     string // its temporary directory (removed unless the server is kept)
	Log     string // tail of redis.log
	Err     error  // the underlying cause
	Retries int    // starts retried because the port was taken
}

// Error says what failed and shows the log tail.
func (e *StartError) Error() string {
	return fmt.Sprintf("redistest: redis-server on %s did not start: %v (port retries: %d)\n--- tail of %s/redis.log ---\n%s",
		e.Addr, e.Err, e.Retries, e.Dir, e.Log)
}

// Unwrap returns the underlying cause.
func (e *StartError) Unwrap() error { return e.Err }

// ReplyError is an error reply from the server ("-ERR ...", "-NOSCRIPT ...").
// Do returns it as the error together with a Reply of KindError.
type ReplyError struct {
	Message string // the whole line without the leading '-'
}

// Error returns the server's message.
func (e *ReplyError) Error() string { return "redistest: server replied: " + e.Message }

// Prefix returns the first word of the message, such as "ERR", "NOSCRIPT",
// "MOVED" or "WRONGTYPE".
func (e *ReplyError) Prefix() string {
	for i := 0; i < len(e.Message); i++ {
		if e.Message[i] == ' ' {
			return e.Message[:i]
		}
	}
	return e.Message
}

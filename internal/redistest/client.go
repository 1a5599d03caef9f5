package redistest

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Do sends one command to the server on a fresh connection (authenticated as
// described at WithACLUser, over TLS with WithTLS) and returns the reply.
//
// It blocks until the reply arrives or ctx is done; ctx bounds the dial, the
// TLS handshake, the write and the read. An error reply is returned both as
// the Reply (KindError) and as a *ReplyError. Safe for concurrent use.
func (s *Server) Do(ctx context.Context, args ...string) (Reply, error) {
	return doCommand(ctx, s.Addr(), s.clientTLS(), s.auth, args)
}

// DoString runs Do and returns a status, bulk or integer reply as a string;
// ErrNil for a nil reply. Safe for concurrent use.
func (s *Server) DoString(ctx context.Context, args ...string) (string, error) {
	r, err := s.Do(ctx, args...)
	if err != nil {
		return "", err
	}
	switch r.Kind {
	case KindStatus, KindBulk:
		return r.Str, nil
	case KindInt:
		return strconv.FormatInt(r.Int, 10), nil
	case KindNil:
		return "", ErrNil
	}
	return "", fmt.Errorf("%w: want string, got %s", ErrUnexpectedReply, r)
}

// DoInt runs Do and returns an integer reply (or a bulk string holding an
// integer); ErrNil for a nil reply. Safe for concurrent use.
func (s *Server) DoInt(ctx context.Context, args ...string) (int64, error) {
	r, err := s.Do(ctx, args...)
	if err != nil {
		return 0, err
	}
	switch r.Kind {
	case KindInt:
		return r.Int, nil
	case KindBulk, KindStatus:
		n, err := strconv.ParseInt(r.Str, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: want integer, got %s", ErrUnexpectedReply, r)
		}
		return n, nil
	case KindNil:
		return 0, ErrNil
	}
	return 0, fmt.Errorf("%w: want integer, got %s", ErrUnexpectedReply, r)
}

// DoStrings runs Do and returns an array reply of strings (PUBSUB CHANNELS,
// KEYS, LRANGE); a nil reply gives a nil slice. Safe for concurrent use.
func (s *Server) DoStrings(ctx context.Context, args ...string) ([]string, error) {
	r, err := s.Do(ctx, args...)
	if err != nil {
		return nil, err
	}
	return r.Strings()
}

// DoMap runs Do and returns a flat field/value array reply (HGETALL,
// CONFIG GET) as a map. Safe for concurrent use.
func (s *Server) DoMap(ctx context.Context, args ...string) (map[string]string, error) {
	list, err := s.DoStrings(ctx, args...)
	if err != nil {
		return nil, err
	}
	if len(list)%2 != 0 {
		return nil, fmt.Errorf("%w: odd number of elements (%d) for a map", ErrUnexpectedReply, len(list))
	}
	m := make(map[string]string, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		m[list[i]] = list[i+1]
	}
	return m, nil
}

// Info runs INFO [section] and returns its "field:value" lines as a map.
// Safe for concurrent use.
func (s *Server) Info(ctx context.Context, section ...string) (map[string]string, error) {
	text, err := s.DoString(ctx, append([]string{"INFO"}, section...)...)
	if err != nil {
		return nil, err
	}
	return parseInfo(text), nil
}

func parseInfo(text string) map[string]string {
	m := make(map[string]string)
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

var errNoCommand = errors.New("redistest: Do needs a command")

// doCommand dials addr, optionally authenticates, sends args and reads the
// reply. The AUTH and the command go in one write.
func doCommand(ctx context.Context, addr string, tlsConf *tls.Config, auth []string, args []string) (Reply, error) {
	if len(args) == 0 {
		return Reply{}, errNoCommand
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Reply{}, err
	}
	defer conn.Close()
	if tlsConf != nil {
		conn = tls.Client(conn, tlsConf)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	// A cancelled ctx unblocks the read by moving the deadline to the past.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	var buf []byte
	if len(auth) > 0 {
		buf = appendCommand(buf, append([]string{"AUTH"}, auth...))
	}
	buf = appendCommand(buf, args)
	if _, err := conn.Write(buf); err != nil {
		return Reply{}, ctxErr(ctx, err)
	}
	br := bufio.NewReader(conn)
	if len(auth) > 0 {
		r, err := readReply(br, 0)
		if err != nil {
			return Reply{}, ctxErr(ctx, err)
		}
		if r.Kind == KindError {
			return r, &ReplyError{Message: r.Str}
		}
	}
	r, err := readReply(br, 0)
	if err != nil {
		return Reply{}, ctxErr(ctx, err)
	}
	if r.Kind == KindError {
		return r, &ReplyError{Message: r.Str}
	}
	return r, nil
}

// ctxErr prefers the context's error when the I/O failed because ctx ended.
// The connection deadline equals ctx's deadline and may fire a moment before
// ctx's own timer, hence the clock check.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
	}
	return err
}

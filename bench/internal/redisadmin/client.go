// Package redisadmin is the benchmark orchestrator's administrative Redis
// connection: INFO sampling at the edges of each window, FLUSHALL between
// cases, SCRIPT LOAD for the ceiling. One connection, one command at a time,
// RESP2 only. It is not the project's client (conn/) and is not meant to be
// fast; it exists so that the orchestrator can sample a server it did not
// start (-addr) and stays out of the measured processes.
package redisadmin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// ErrReply is wrapped by the error returned for a server error reply.
var ErrReply = errors.New("redisadmin: server replied with an error")

// Client is one connection to a redis-server. Safe for concurrent use: calls
// are serialized.
type Client struct {
	mu   sync.Mutex // guards the fields below and the connection's stream
	addr string
	c    net.Conn
	r    *bufio.Reader
}

// Dial connects to addr, bounded by ctx.
func Dial(ctx context.Context, addr string) (*Client, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("redisadmin: dial %s: %w", addr, err)
	}
	return &Client{addr: addr, c: c, r: bufio.NewReader(c)}, nil
}

// Addr returns the address the client is connected to.
func (c *Client) Addr() string { return c.addr }

// Do sends one command and returns its reply: string (simple or bulk), int64,
// []any, or nil. A server error reply is returned as an error wrapping
// ErrReply. It blocks, bounded by ctx (the deadline goes on the connection;
// after a timeout the connection is unusable and every later call fails).
func (c *Client) Do(ctx context.Context, args ...string) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.boundLocked(ctx)
	buf := make([]byte, 0, 64)
	buf = append(buf, '*')
	buf = strconv.AppendInt(buf, int64(len(args)), 10)
	buf = append(buf, '\r', '\n')
	for _, a := range args {
		buf = append(buf, '$')
		buf = strconv.AppendInt(buf, int64(len(a)), 10)
		buf = append(buf, '\r', '\n')
		buf = append(buf, a...)
		buf = append(buf, '\r', '\n')
	}
	if _, err := c.c.Write(buf); err != nil {
		return nil, fmt.Errorf("redisadmin: write: %w", err)
	}
	return c.read()
}

// Receive reads the next reply without sending anything: what a subscribed
// connection receives (a pub/sub message is a []any of "message", the channel
// and the payload). It blocks, bounded by ctx as Do is.
func (c *Client) Receive(ctx context.Context) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.boundLocked(ctx)
	return c.read()
}

// defaultBound bounds a call whose context has no deadline, so that a server
// that stops answering cannot hang a benchmark.
const defaultBound = 30 * time.Second

// boundLocked puts ctx's deadline (defaultBound from now without one) on the
// connection, for the call about to run. Called with c.mu held.
func (c *Client) boundLocked(ctx context.Context) {
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(defaultBound)
	}
	_ = c.c.SetDeadline(dl)
}

// String runs Do and expects a string reply.
func (c *Client) String(ctx context.Context, args ...string) (string, error) {
	v, err := c.Do(ctx, args...)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("redisadmin: %s: unexpected reply %T", args[0], v)
	}
	return s, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.c.Close() }

func (c *Client) read() (any, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("redisadmin: read: %w", err)
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("redisadmin: malformed reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, fmt.Errorf("%w: %s", ErrReply, body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, fmt.Errorf("redisadmin: bad bulk length %q", body)
		}
		if n < 0 {
			return nil, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return nil, fmt.Errorf("redisadmin: read: %w", err)
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, fmt.Errorf("redisadmin: bad array length %q", body)
		}
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = c.read(); err != nil && !errors.Is(err, ErrReply) {
				return nil, err
			}
		}
		return out, nil
	default:
		return nil, fmt.Errorf("redisadmin: unexpected reply type %q", line[0])
	}
}

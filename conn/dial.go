package conn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"time"

	"github.com/locksmith-go/locksmith/resp"
)

// dialed is a connection that passed the handshake, ready to be given to a transport.
type dialed struct {
	raw net.Conn  // the TCP connection
	tc  *tls.Conn // non-nil over TLS
	nc  net.Conn  // what to read and write: tc, or raw
}

// dialConn opens a connection to addr and runs the handshake (with the ROLE check when master is set), all bounded by
// ctx (the caller gives it DialTimeout). On failure it returns the step that failed ("dial", "tls", "handshake")
// and the cause; the connection is then closed. It blocks; it runs on a dial goroutine, never on an event loop.
//
// The handshake runs here, on the plain net.Conn, before the connection is enrolled into an event loop: it is a
// few sequential request/replies with a deadline, which is simplest on a blocking socket and keeps the pipeline
// free of a "handshaking" state.
func dialConn(ctx context.Context, cfg *Config, addr string, master bool) (d dialed, op string, err error) {
	var dialer net.Dialer // Go sets TCP_NODELAY on TCP connections; gnet keeps it on the duplicated socket
	d.raw, err = dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return d, "dial", err
	}
	var nc net.Conn = d.raw
	if cfg.TLS != nil {
		if d.tc, err = tlsHandshake(ctx, cfg, d.raw, addr); err != nil {
			_ = d.raw.Close()
			return d, "tls", err
		}
		nc = d.tc
	}
	if err := runHandshake(ctx, nc, cfg, master); err != nil {
		_ = d.raw.Close()
		if cfg.TLS == nil && mayBeTLS(err) && speaksTLS(ctx, addr) {
			err = tlsServerError(addr)
		} else if cfg.TLS != nil {
			err = tlsRefusal(err, addr)
		}
		return d, "handshake", err
	}
	d.nc = nc
	return d, "", nil
}

// ctxOr returns ctx's error when ctx has ended (the I/O error is then only its consequence), else err. The only
// I/O deadline set during the handshake is ctx's, so an I/O timeout is ctx's deadline even if ctx's own timer has
// not fired yet.
func ctxOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
	}
	return err
}

// query runs cmds on a fresh connection to addr (handshake included, ROLE-checked when master is set) and returns
// their replies, error replies included as values. It blocks for at most ctx, on the calling goroutine: it is how
// a Sentinel or cluster Client asks Sentinels and nodes for the topology, off the event loops and the pipelines.
func query(ctx context.Context, cfg *Config, addr string, master bool, cmds ...[]string) ([]resp.Value, error) {
	d, op, err := dialConn(ctx, cfg, addr, master)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, addr, err)
	}
	defer d.raw.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = d.nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = d.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var buf []byte
	for _, c := range cmds {
		buf = resp.AppendCommand(buf, c...)
	}
	if _, err := d.nc.Write(buf); err != nil {
		return nil, fmt.Errorf("%s: %w", addr, ctxOr(ctx, err))
	}
	dec := resp.Decoder{Limits: cfg.Limits}
	maxReply := int(min(cfg.Limits.Resolved().MaxReplyLen, math.MaxInt32)) + maxIntegerLine
	rbuf := make([]byte, 0, 4096)
	out := make([]resp.Value, 0, len(cmds))
	for len(out) < len(cmds) {
		v, n, err := dec.Decode(rbuf)
		if err == nil {
			rbuf = rbuf[:copy(rbuf, rbuf[n:])]
			out = append(out, v)
			continue
		}
		if !errors.Is(err, resp.ErrIncomplete) {
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
		if len(rbuf) >= maxReply {
			return nil, fmt.Errorf("%s: %w", addr, errPartialTooLong) // cannot happen: see below
		}
		if len(rbuf) == cap(rbuf) {
			// The decoder refuses a reply over MaxReplyLen as soon as its bytes show it, so the buffer, which
			// holds one incomplete reply, never needs to grow past that.
			grown := make([]byte, len(rbuf), min(2*cap(rbuf), maxReply))
			copy(grown, rbuf)
			rbuf = grown
		}
		m, err := d.nc.Read(rbuf[len(rbuf):cap(rbuf)])
		rbuf = rbuf[:len(rbuf)+m]
		if err != nil {
			return nil, fmt.Errorf("%s: %w", addr, ctxOr(ctx, err))
		}
	}
	return out, nil
}

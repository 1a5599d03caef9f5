package conn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/resp"
)

// dialed is a connection that passed the handshake, ready to be given to a transport.
type dialed struct {
	raw net.Conn  // the TCP connection
	tc  *tls.Conn // non-nil over TLS
}

// dialConn opens a connection to cfg.Addr and runs the handshake, all bounded by ctx (the caller gives it
// DialTimeout). On failure it returns the step that failed ("dial", "tls", "handshake") and the cause; the connection
// is then closed. It blocks; it runs on a dial goroutine, never on an event loop.
//
// The handshake runs here, on the plain net.Conn, before the connection is enrolled into an event loop: it is a
// few sequential request/replies with a deadline, which is simplest on a blocking socket and keeps the pipeline
// free of a "handshaking" state.
func dialConn(ctx context.Context, cfg *Config) (d dialed, op string, err error) {
	var dialer net.Dialer // Go sets TCP_NODELAY on TCP connections; gnet keeps it on the duplicated socket
	d.raw, err = dialer.DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return d, "dial", err
	}
	var nc net.Conn = d.raw
	if cfg.TLS != nil {
		tcfg := cfg.TLS
		if tcfg.ServerName == "" && !tcfg.InsecureSkipVerify {
			tcfg = tcfg.Clone()
			tcfg.ServerName, _, _ = net.SplitHostPort(cfg.Addr)
		}
		d.tc = tls.Client(d.raw, tcfg)
		if err := d.tc.HandshakeContext(ctx); err != nil {
			_ = d.raw.Close()
			return d, "tls", err
		}
		nc = d.tc
	}
	if err := handshake(ctx, nc, cfg); err != nil {
		_ = d.raw.Close()
		return d, "handshake", err
	}
	return d, "", nil
}

// handshake authenticates, selects the database, names the connection and PINGs, in one write, and checks every
// reply. The PING makes a server that accepts connections but cannot serve (max clients reached, LOADING) a failed
// attempt, retried with backoff, instead of a connection that fails its first command.
func handshake(ctx context.Context, nc net.Conn, cfg *Config) error {
	var buf []byte
	var names []string
	if cfg.Password != "" || cfg.Username != "" {
		if cfg.Username != "" {
			buf = resp.AppendCommand(buf, "AUTH", cfg.Username, cfg.Password)
		} else {
			buf = resp.AppendCommand(buf, "AUTH", cfg.Password)
		}
		names = append(names, "AUTH")
	}
	if cfg.DB != 0 {
		buf = resp.AppendCommand(buf, "SELECT", strconv.Itoa(cfg.DB))
		names = append(names, "SELECT")
	}
	if cfg.ClientName != "" {
		buf = resp.AppendCommand(buf, "CLIENT", "SETNAME", cfg.ClientName)
		names = append(names, "CLIENT SETNAME")
	}
	buf = appendPing(buf)
	names = append(names, "PING")

	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) }) // cancellation unblocks I/O
	defer stop()
	if _, err := nc.Write(buf); err != nil {
		return ctxOr(ctx, err)
	}

	dec := resp.Decoder{Limits: cfg.Limits}
	rbuf := make([]byte, 0, 512)
	var firstErr error
	for _, name := range names {
		for {
			v, n, err := dec.Decode(rbuf)
			if err == nil {
				rbuf = rbuf[:copy(rbuf, rbuf[n:])]
				if se := v.Err(); se != nil && firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", name, se)
				}
				break
			}
			if !errors.Is(err, resp.ErrIncomplete) {
				return err
			}
			if len(rbuf) == cap(rbuf) {
				rbuf = append(rbuf, 0)[:len(rbuf)]
			}
			m, err := nc.Read(rbuf[len(rbuf):cap(rbuf)])
			rbuf = rbuf[:len(rbuf)+m]
			if err != nil {
				return ctxOr(ctx, err)
			}
		}
	}
	if firstErr != nil {
		return firstErr
	}
	return nc.SetDeadline(time.Time{})
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

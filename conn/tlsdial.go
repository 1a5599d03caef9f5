package conn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"
)

// A TLS client on a plaintext port, and a plaintext client on a TLS port, are configuration mistakes that would
// otherwise look like an unreachable or hanging server: redis-server reads a TLS ClientHello as an inline command
// that never ends (the handshake then waits for the whole DialTimeout), and a TLS server resets a connection that
// opens with RESP. Both are recognised here, within a fraction of a second, and reported as ErrInvalidConfig.

// maxTLSProbeDelay is how long a TLS handshake may go unanswered before a plain-RESP probe checks whether the port
// speaks TLS at all (a quarter of DialTimeout when that is shorter). Servers that speak TLS answer a ClientHello
// within a round trip, so the probe runs only against a slow link or a plaintext server.
const maxTLSProbeDelay = 250 * time.Millisecond

// tlsHandshake runs the TLS handshake of a connection attempt on raw, bounded by ctx. A server that answers in plain
// RESP fails it at once with an error matching ErrInvalidConfig, whether it answered the ClientHello itself or
// stayed silent and answered the probe's PING on a second connection.
func tlsHandshake(ctx context.Context, cfg *Config, raw net.Conn, addr string) (*tls.Conn, error) {
	tcfg := cfg.TLS
	if tcfg.ServerName == "" && !tcfg.InsecureSkipVerify {
		tcfg = tcfg.Clone()
		tcfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tc := tls.Client(raw, tcfg)
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	probed := make(chan struct{})
	go func() { // owner: tlsHandshake, which waits for it below; bounded by hctx
		defer close(probed)
		t := time.NewTimer(min(maxTLSProbeDelay, cfg.DialTimeout/4))
		defer t.Stop()
		select {
		case <-hctx.Done():
			return
		case <-t.C:
		}
		if answersPlainRESP(hctx, addr) {
			cancel(plainServerError(addr))
		}
	}()
	err := tc.HandshakeContext(hctx)
	cause := context.Cause(hctx)
	cancel(nil)
	<-probed
	if err == nil {
		return tc, nil
	}
	if errors.Is(cause, ErrInvalidConfig) {
		return nil, cause
	}
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) && (rh.RecordHeader[0] == '+' || rh.RecordHeader[0] == '-') {
		return nil, plainServerError(addr) // it answered the ClientHello with a RESP error line
	}
	return nil, tlsRefusal(ctxOr(ctx, err), addr)
}

// tlsRefusal returns err, or when it shows that one side refused the other's certificate, an error matching
// ErrInvalidConfig that says which option to set: a certificate only changes when someone changes it, so this is
// not retried as an outage. Over TLS 1.3 the server's refusal of the client certificate arrives after the
// client's handshake, at the first read, so the dial's handshake errors pass through here too.
func tlsRefusal(err error, addr string) error {
	var cv *tls.CertificateVerificationError
	if errors.As(err, &cv) {
		return fmt.Errorf("%w: the certificate of the server at %s did not verify: %v; trust its CA with the URL "+
			"option tls_ca_file (Config.TLS.RootCAs), or check the host name", ErrInvalidConfig, addr, cv.Err)
	}
	// The alerts of a server that refused the client certificate (crypto/tls does not export their type).
	msg := err.Error()
	for _, alert := range []string{"tls: certificate required", "tls: bad certificate", "tls: unknown certificate authority",
		"tls: unknown certificate", "tls: expired certificate", "tls: revoked certificate"} {
		if strings.Contains(msg, "remote error: "+alert) {
			return fmt.Errorf("%w: the server at %s refused the client certificate (%s); set the URL options "+
				"tls_cert_file and tls_key_file (Config.TLS.Certificates) to a certificate its CA signed",
				ErrInvalidConfig, addr, alert)
		}
	}
	return err
}

// answersPlainRESP reports whether the server at addr answers a plain PING with a RESP line (+PONG, or an error
// such as NOAUTH), on a probe connection closed before returning. It blocks for at most ctx.
func answersPlainRESP(ctx context.Context, addr string) bool {
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return false
	}
	var b [1]byte
	n, _ := io.ReadFull(c, b[:])
	return n == 1 && (b[0] == '+' || b[0] == '-')
}

// mayBeTLS reports whether a plaintext handshake failed the way it does against a TLS server: the connection was
// closed or reset before any reply, or the reply starts with a TLS record (an alert or a handshake message).
func mayBeTLS(err error) bool {
	var he *HandshakeError
	if errors.As(err, &he) {
		return he.lead == 0x15 || he.lead == 0x16
	}
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// speaksTLS reports whether the server at addr answers a TLS ClientHello with a TLS record, on a probe connection
// closed before returning. It blocks for at most ctx.
func speaksTLS(ctx context.Context, addr string) bool {
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	rc := &firstByte{Conn: c}
	// Only the first byte the server sends matters: no certificate is checked and nothing is sent after.
	_ = tls.Client(rc, &tls.Config{InsecureSkipVerify: true}).HandshakeContext(ctx)
	return rc.seen && (rc.b == 0x16 || rc.b == 0x15)
}

// firstByte records the first byte read through it.
type firstByte struct {
	net.Conn
	seen bool
	b    byte
}

func (f *firstByte) Read(p []byte) (int, error) {
	n, err := f.Conn.Read(p)
	if n > 0 && !f.seen {
		f.seen, f.b = true, p[0]
	}
	return n, err
}

// plainServerError is the error of TLS against a server that answers in plain RESP.
func plainServerError(addr string) error {
	return fmt.Errorf("%w: the server at %s answers without TLS (plain RESP): use redis:// (Config.TLS nil), "+
		"or the port where the server serves TLS (its tls-port)", ErrInvalidConfig, addr)
}

// tlsServerError is the error of a plaintext connection to a server that speaks TLS.
func tlsServerError(addr string) error {
	return fmt.Errorf("%w: the server at %s speaks TLS: use a rediss:// URL (set Config.TLS)", ErrInvalidConfig, addr)
}

package conn_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"

	"github.com/locksmith-go/locksmith/resp"
)

// fakeServer is the one fake in this package's tests: a TCP (or, from startFakeTLS, TLS) server that speaks just
// enough RESP2 to get through the client's handshake and then follows a script, to inject faults a real
// redis-server never produces (malformed replies, a close in the middle of a frame). Connection number i (from 0)
// is served by behave(i, ...); every connection answers PING with +PONG first, as the handshake expects.
type fakeServer struct {
	ln       net.Listener
	behave   func(i int, cmd []string, c net.Conn) bool // returns false to stop serving the connection
	accepted atomic.Int32

	// silentAfterHandshake, when >= 0, is the number of the connection that stops answering anything (PINGs
	// included) after the handshake's PING; set before the client connects. -1 (the default): none.
	silentAfterHandshake int
	// answerPing, when set before the client connects, answers every PING instead of +PONG; it returns false to
	// stop serving the connection.
	answerPing func(i int, c net.Conn) bool
	wg         sync.WaitGroup
	mu         sync.Mutex
	conns      []net.Conn
}

func startFake(t *testing.T, behave func(i int, cmd []string, c net.Conn) bool) *fakeServer {
	t.Helper()
	return serveFake(t, listenLoopback(t), behave)
}

// startFakeTLS is startFake serving TLS (a fake rediss:// server) with the certificate of srv, a redistest server
// started WithTLS: a client trusting srv.TLSConfig() accepts the fake too.
func startFakeTLS(t *testing.T, srv *redistest.Server, behave func(i int, cmd []string, c net.Conn) bool) *fakeServer {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(srv.Dir(), "redis.crt"), filepath.Join(srv.Dir(), "redis.key"))
	if err != nil {
		t.Fatalf("the certificate of a redistest server started WithTLS: %v", err)
	}
	tcfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	return serveFake(t, tls.NewListener(listenLoopback(t), tcfg), behave)
}

func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func serveFake(t *testing.T, ln net.Listener, behave func(i int, cmd []string, c net.Conn) bool) *fakeServer {
	f := &fakeServer{ln: ln, behave: behave, silentAfterHandshake: -1}
	f.wg.Add(1)
	go f.accept() // owner: the test; ends when the listener closes in Cleanup
	t.Cleanup(f.close)
	return f
}

func (f *fakeServer) addr() string { return f.ln.Addr().String() }

func (f *fakeServer) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		i := int(f.accepted.Add(1)) - 1
		f.mu.Lock()
		f.conns = append(f.conns, tcpOf(c))
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(i, c) // owner: the test; ends when the connection closes
	}
}

// tcpOf returns the TCP connection under c (c itself unless it is TLS). The fake closes that one: closing a
// *tls.Conn first sends close_notify, which waits for a Write in progress on another goroutine (an endless reply
// to a client that stopped reading), while closing the TCP connection ends both at once.
func tcpOf(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}

// serve reads commands and hands each to behave, answering the handshake's PING itself.
func (f *fakeServer) serve(i int, c net.Conn) {
	defer f.wg.Done()
	defer tcpOf(c).Close()
	var dec resp.Decoder
	buf := make([]byte, 0, 4096)
	pings := 0
	for {
		for {
			v, n, err := dec.Decode(buf)
			if errors.Is(err, resp.ErrIncomplete) {
				break
			}
			if err != nil {
				return
			}
			buf = buf[:copy(buf, buf[n:])]
			cmd := make([]string, len(v.Elems))
			for j, e := range v.Elems {
				cmd[j] = e.Str
			}
			if i == f.silentAfterHandshake && pings > 0 {
				continue // a dead peer: reads, never answers
			}
			if len(cmd) == 1 && cmd[0] == "PING" {
				pings++
				if f.answerPing != nil {
					if !f.answerPing(i, c) {
						return
					}
					continue
				}
				if _, err := c.Write([]byte("+PONG\r\n")); err != nil {
					return
				}
				continue
			}
			if !f.behave(i, cmd, c) {
				return
			}
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := c.Read(buf[len(buf):cap(buf)])
		if err != nil {
			return
		}
		buf = buf[:len(buf)+n]
	}
}

func (f *fakeServer) close() {
	_ = f.ln.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// reply writes raw bytes.
func reply(c net.Conn, s string) bool {
	_, err := c.Write([]byte(s))
	return err == nil
}

// relay returns a behaviour that sends each command to the real server at upstream, on one connection per fake
// connection, and copies its reply back: the client then talks to a real redis-server through the fake, which can
// still inject a fault into any reply. Once a connection subscribes (SUBSCRIBE, SSUBSCRIBE, PSUBSCRIBE), its
// upstream's bytes are copied back as they come, pushed messages included; the fake still answers PING itself,
// which could then land inside a message: a client relayed for pub/sub sets Config.PingInterval < 0.
func relay(t *testing.T, upstream string) func(i int, cmd []string, c net.Conn) bool {
	return relayVia(t, func() (net.Conn, error) { return net.Dial("tcp", upstream) })
}

// relayTLS is relay to a real server serving TLS, with the client configuration tcfg.
func relayTLS(t *testing.T, upstream string, tcfg *tls.Config) func(i int, cmd []string, c net.Conn) bool {
	return relayVia(t, func() (net.Conn, error) { return tls.Dial("tcp", upstream, tcfg) })
}

// relayed is one fake connection's upstream.
type relayed struct {
	up      net.Conn
	copying bool // subscribed: a goroutine copies every upstream byte back
}

func relayVia(t *testing.T, dial func() (net.Conn, error)) func(i int, cmd []string, c net.Conn) bool {
	var mu sync.Mutex
	ups := map[int]*relayed{}
	var copiers sync.WaitGroup
	t.Cleanup(func() {
		mu.Lock()
		for _, r := range ups {
			_ = r.up.Close()
		}
		mu.Unlock()
		copiers.Wait()
	})
	return func(i int, cmd []string, c net.Conn) bool {
		mu.Lock()
		r, ok := ups[i]
		if !ok {
			u, err := dial()
			if err != nil {
				mu.Unlock()
				return false
			}
			r = &relayed{up: u}
			ups[i] = r
		}
		if !r.copying && (cmd[0] == "SUBSCRIBE" || cmd[0] == "SSUBSCRIBE" || cmd[0] == "PSUBSCRIBE") {
			r.copying = true
			copiers.Add(1)
			go func() { // owner: the relay; ends when the upstream closes (Cleanup at the latest) or c does
				defer copiers.Done()
				_, _ = io.Copy(c, r.up)
			}()
		}
		copying := r.copying
		mu.Unlock()
		u := r.up
		if _, err := u.Write(resp.AppendCommand(nil, cmd...)); err != nil {
			return false
		}
		if copying {
			return true
		}
		var dec resp.Decoder
		buf := make([]byte, 0, 4096)
		for {
			n, err := dec.Scan(buf)
			if err == nil {
				return reply(c, string(buf[:n]))
			}
			if !errors.Is(err, resp.ErrIncomplete) {
				return false
			}
			if len(buf) == cap(buf) {
				buf = append(buf, 0)[:len(buf)]
			}
			m, err := u.Read(buf[len(buf):cap(buf)])
			if err != nil {
				return false
			}
			buf = buf[:len(buf)+m]
		}
	}
}

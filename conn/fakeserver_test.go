package conn_test

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/locksmith-go/locksmith/resp"
)

// fakeServer is the one fake in this package's tests: a TCP server that speaks just enough RESP2 to get through
// the client's handshake and then follows a script, to inject faults a real redis-server never produces (malformed
// replies, a close in the middle of a frame). Connection number i (from 0) is served by behave(i, ...); every
// connection answers PING with +PONG first, as the handshake expects.
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(i, c) // owner: the test; ends when the connection closes
	}
}

// serve reads commands and hands each to behave, answering the handshake's PING itself.
func (f *fakeServer) serve(i int, c net.Conn) {
	defer f.wg.Done()
	defer c.Close()
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
// still inject a fault into any reply. It handles request/reply commands only (no pub/sub).
func relay(t *testing.T, upstream string) func(i int, cmd []string, c net.Conn) bool {
	var mu sync.Mutex
	ups := map[int]net.Conn{}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, u := range ups {
			_ = u.Close()
		}
	})
	return func(i int, cmd []string, c net.Conn) bool {
		mu.Lock()
		u, ok := ups[i]
		if !ok {
			var err error
			if u, err = net.Dial("tcp", upstream); err != nil {
				mu.Unlock()
				return false
			}
			ups[i] = u
		}
		mu.Unlock()
		if _, err := u.Write(resp.AppendCommand(nil, cmd...)); err != nil {
			return false
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

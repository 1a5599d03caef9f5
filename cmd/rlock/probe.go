package main

import (
	"io"
	"net"
	"time"
)

// plainProbeTimeout bounds the plain-text probe of a server that did not answer a TLS handshake.
const plainProbeTimeout = time.Second

// answersPlainRESP reports whether the server at addr answers a plain-text PING with a RESP reply ("+PONG", or
// "-NOAUTH" from a server that wants a password). rlock asks it when a rediss:// handshake got no answer within
// the dial timeout: a Redis server without TLS reads the TLS greeting as the start of a command and waits for the
// rest, so the client sees only a timeout, and this probe turns "no answer" into "this server does not speak TLS".
// It sends no credentials (the URL's password must not cross the network in clear text), only the PING. It blocks
// for at most timeout; it talks to the server directly, not through conn, because it is a diagnostic of one
// round trip on a connection conn refused to set up.
func answersPlainRESP(addr string, timeout time.Duration) bool {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return false
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return false
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return false
	}
	return b[0] == '+' || b[0] == '-'
}

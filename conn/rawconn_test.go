package conn_test

import (
	"bufio"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// rawConn is the baseline of the G=1 comparison: a plain net.Conn, one write and a buffered read per command, the
// fastest a sequential client can be.
type rawConn struct {
	nc  net.Conn
	r   *bufio.Reader
	buf []byte
	dec resp.Decoder
}

func dialRaw(tb testing.TB, srv *redistest.Server) *rawConn {
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		tb.Fatal(err)
	}
	return &rawConn{nc: nc, r: bufio.NewReaderSize(nc, 4096), buf: make([]byte, 0, 4096)}
}

func (c *rawConn) close() { _ = c.nc.Close() }

// roundTrip writes cmd and reads exactly one reply.
func (c *rawConn) roundTrip(cmd []byte) error {
	if _, err := c.nc.Write(cmd); err != nil {
		return err
	}
	c.buf = c.buf[:0]
	for {
		if len(c.buf) > 0 {
			_, n, err := c.dec.Decode(c.buf)
			if err == nil {
				if n != len(c.buf) {
					return errors.New("raw: trailing bytes")
				}
				return nil
			}
			if !errors.Is(err, resp.ErrIncomplete) {
				return err
			}
		}
		chunk := c.buf[len(c.buf):cap(c.buf)]
		n, err := c.r.Read(chunk)
		if err != nil {
			return err
		}
		c.buf = c.buf[:len(c.buf)+n]
	}
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

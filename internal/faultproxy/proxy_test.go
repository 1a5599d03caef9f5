package faultproxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client is a raw RESP client through the proxy.
type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

func (c *client) send(args ...string) {
	c.t.Helper()
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	_, err := c.c.Write(b)
	require.NoError(c.t, err)
}

// line reads one reply line within d.
func (c *client) line(d time.Duration) (string, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(d))
	s, err := c.r.ReadString('\n')
	return s, err
}

// pingOnce dials addr, sends PING and reads the reply; the reset of a
// refused connection may surface at the dial, the write or the read.
// wantPong sends PING and requires PONG within 5 s: the connection works end to end.
func (c *client) wantPong(t *testing.T) {
	t.Helper()
	c.send("PING")
	got, err := c.line(5 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, "+PONG\r\n", got)
}

func pingOnce(addr string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return errors.New("unexpected reply " + strconv.Quote(line))
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestForwardsToRealRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p := Start(t, srv.Addr())
	assert.Equal(t, srv.Addr(), p.Target())
	c := dial(t, p.Addr())
	for i := range 100 {
		c.send("INCR", "n")
		got, err := c.line(5 * time.Second)
		require.NoError(t, err)
		assert.Equal(t, ":"+strconv.Itoa(i+1)+"\r\n", got)
	}
	assert.Equal(t, 1, p.Active())
	assert.EqualValues(t, 1, p.Accepted())
}

func TestLatencyDelaysEachDirection(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p := Start(t, srv.Addr())
	c := dial(t, p.Addr())
	for _, dir := range []Direction{Upstream, Downstream} {
		p.SetLatency(dir, 150*time.Millisecond)
		start := time.Now()
		c.wantPong(t)
		assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond, "%v latency not applied", dir)
		p.SetLatency(dir, 0)
	}
	// Removing a long latency releases what is queued at once.
	p.SetLatency(Both, time.Hour)
	c.send("PING")
	_, err := c.line(100 * time.Millisecond)
	require.True(t, isTimeout(err), "reply must be held: %v", err)
	p.SetLatency(Both, 0)
	got, err := c.line(5 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, "+PONG\r\n", got)
}

func TestStallHoldsRepliesWithoutClosing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p := Start(t, srv.Addr())
	c := dial(t, p.Addr())
	p.Stall(Downstream)
	c.send("SET", "k", "v")
	_, err := c.line(200 * time.Millisecond)
	require.True(t, isTimeout(err), "reply must be stalled: %v", err)
	// The request went through: the server has the key.
	v, err := srv.DoString(ctx(t), "GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "v", v)
	p.Unstall(Downstream)
	got, err := c.line(5 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, "+OK\r\n", got)

	p.Stall(Upstream)
	before := p.Read(Upstream)
	c.send("SET", "k2", "v2")
	_, err = c.line(200 * time.Millisecond)
	require.True(t, isTimeout(err))
	sent := int64(len("*3\r\n$3\r\nSET\r\n$2\r\nk2\r\n$2\r\nv2\r\n"))
	assert.Eventually(t, func() bool { return p.Read(Upstream) == before+sent }, 5*time.Second, time.Millisecond,
		"the stalled request is read, and counted")
	_, err = srv.DoString(ctx(t), "GET", "k2")
	assert.ErrorIs(t, err, redistest.ErrNil, "a stalled request must not reach the server")
	p.Restore()
	got, err = c.line(5 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, "+OK\r\n", got)
}

// Withhold loses what one connection reads meanwhile, on that connection alone: the command ran, its reply never
// comes (Restore does not bring it), and the proxy's other connections go on.
func TestWithholdLosesTheRepliesOfOneConnection(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p := Start(t, srv.Addr())
	a, b := dial(t, p.Addr()), dial(t, p.Addr())
	a.wantPong(t)
	b.wantPong(t)
	p.Withhold(Downstream)
	a.send("SET", "k", "v")
	_, err := a.line(200 * time.Millisecond)
	require.True(t, isTimeout(err), "reply must be withheld: %v", err)
	assert.Equal(t, int64(len("+OK\r\n")), p.Withheld(Downstream), "the withheld reply is counted")
	assert.Zero(t, p.Withheld(Upstream), "nothing was withheld upstream")
	v, err := srv.DoString(ctx(t), "GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "v", v, "the request went through")
	p.Restore()
	b.wantPong(t)
	_, err = a.line(200 * time.Millisecond)
	require.True(t, isTimeout(err), "a withheld reply must stay withheld after Restore: %v", err)

	// Release ends the withholding of what comes next, as Restore does.
	p.Withhold(Downstream)
	p.Release(Downstream)
	b.wantPong(t)
}

func TestDropAllClosesBothSides(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p := Start(t, srv.Addr())
	c := dial(t, p.Addr())
	c.send("CLIENT", "SETNAME", "victim")
	_, err := c.line(5 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, p.DropAll())
	_, err = c.line(5 * time.Second)
	assert.ErrorIs(t, err, io.EOF)
	require.Eventually(t, func() bool {
		list, err := srv.DoString(ctx(t), "CLIENT", "LIST")
		return err == nil && !containsName(list, "victim")
	}, 5*time.Second, 10*time.Millisecond, "the server side must be closed too")
	assert.Eventually(t, func() bool { return p.Active() == 0 }, 5*time.Second, 10*time.Millisecond)

	// New connections work as before.
	dial(t, p.Addr()).wantPong(t)
}

func containsName(clientList, name string) bool {
	for _, f := range splitFields(clientList) {
		if f == "name="+name {
			return true
		}
	}
	return false
}

func splitFields(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' || s[i] == '\n' || s[i] == '\r' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	return out
}

func TestResetAllSendsRST(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p := Start(t, srv.Addr())
	c := dial(t, p.Addr())
	c.send("PING")
	_, err := c.line(5 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, p.ResetAll())
	_, err = c.line(5 * time.Second)
	assert.ErrorIs(t, err, syscall.ECONNRESET)
}

func TestPartitionBlackHolesThenHeals(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p := Start(t, srv.Addr())
	c := dial(t, p.Addr())
	c.send("PING")
	_, err := c.line(5 * time.Second)
	require.NoError(t, err)

	p.Partition(400 * time.Millisecond)
	c.send("SET", "during", "partition")
	_, err = c.line(150 * time.Millisecond)
	require.True(t, isTimeout(err), "existing connection must be black-holed: %v", err)
	_, err = srv.DoString(ctx(t), "GET", "during")
	assert.ErrorIs(t, err, redistest.ErrNil, "nothing crosses a partition")
	fresh := dial(t, p.Addr()) // accepted, but not forwarded yet
	fresh.send("PING")
	_, err = fresh.line(100 * time.Millisecond)
	require.True(t, isTimeout(err), "new connection must be black-holed: %v", err)

	// After the partition both deliver what was queued, in order.
	got, err := c.line(5 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, "+OK\r\n", got)
	got, err = fresh.line(5 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, "+PONG\r\n", got)

	// An open-ended partition lasts until Restore.
	p.Partition(0)
	c.send("PING")
	_, err = c.line(200 * time.Millisecond)
	require.True(t, isTimeout(err))
	p.Restore()
	got, err = c.line(5 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, "+PONG\r\n", got)
}

func TestCutAfterCutsAReplyMidFrame(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p := Start(t, srv.Addr())
	c := dial(t, p.Addr())
	p.CutAfter(Downstream, 3)
	c.send("PING")
	_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c.r)
	require.NoError(t, err, "a cut ends with a clean close")
	assert.Equal(t, "+PO", string(b))

	// The cut applies to new connections too, until Restore.
	c2 := dial(t, p.Addr())
	c2.send("PING")
	_ = c2.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err = io.ReadAll(c2.r)
	require.NoError(t, err)
	assert.Equal(t, "+PO", string(b))
	p.Restore()
	dial(t, p.Addr()).wantPong(t)
}

func TestCutAfterUpstreamDropsAPipelineHalfway(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p := Start(t, srv.Addr())
	c := dial(t, p.Addr())
	const one = "*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n" // 23 bytes
	p.CutAfter(Upstream, int64(len(one))*5+7)     // 5 whole commands and a piece of the 6th
	var pipeline []byte
	for range 10 {
		pipeline = append(pipeline, one...)
	}
	_, err := c.c.Write(pipeline)
	require.NoError(t, err)
	_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.ReadAll(c.r)
	n, err := srv.DoInt(ctx(t), "GET", "n")
	require.NoError(t, err)
	assert.EqualValues(t, 5, n, "exactly the whole commands before the cut ran")
}

func TestRefuseResetsNewConnections(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p := Start(t, srv.Addr())
	p.Refuse(true)
	err := pingOnce(p.Addr())
	assert.ErrorIs(t, err, syscall.ECONNRESET, "refused connections are reset, not held")
	p.Refuse(false)
	dial(t, p.Addr()).wantPong(t)
}

func TestTargetDownResetsClientAndServerRestartHeals(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p := Start(t, srv.Addr())
	c := dial(t, p.Addr())
	require.NoError(t, srv.Kill())
	_, err := c.line(5 * time.Second)
	require.Error(t, err, "the server's death reaches the client")
	err = pingOnce(p.Addr())
	assert.ErrorIs(t, err, syscall.ECONNRESET, "no target: the client is reset")
	require.NoError(t, srv.Restart())
	dial(t, p.Addr()).wantPong(t)
}

func TestCloseEndsEverything(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p, err := New(srv.Addr())
	require.NoError(t, err)
	p.Partition(0)
	c := dial(t, p.Addr()) // held in the partition wait
	dial(t, p.Addr())
	require.Eventually(t, func() bool { return p.Active() == 2 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, p.Close())
	assert.Equal(t, 0, p.Active())
	_, err = c.line(5 * time.Second)
	assert.Error(t, err)
	assert.NoError(t, p.Close(), "second Close")
	_, err = net.Dial("tcp", p.Addr())
	assert.Error(t, err, "the listener is closed")
}

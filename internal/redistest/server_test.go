package redistest

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestStartAnswersPingAndCloseStopsExactlyThatProcess(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s, err := StartServer()
	require.NoError(t, err)
	pid, dir := s.Pid(), s.Dir()
	require.NotZero(t, pid)
	assert.Equal(t, "127.0.0.1:"+strconv.Itoa(s.Port()), s.Addr())
	assert.Equal(t, "redis://"+s.Addr(), s.URL())
	assert.Nil(t, s.TLSConfig())

	pong, err := s.DoString(ctx, "PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", pong)
	info, err := s.Info(ctx, "persistence")
	require.NoError(t, err)
	assert.Equal(t, "0", info["aof_enabled"], "no persistence by default")
	cfg, err := s.DoMap(ctx, "CONFIG", "GET", "save")
	require.NoError(t, err)
	assert.Equal(t, "", cfg["save"], "no RDB save points by default")

	require.NoError(t, s.Close())
	assert.True(t, processGone(pid), "pid %d still exists after Close", pid)
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "directory %s not removed: %v", dir, err)
	assert.Zero(t, s.Pid())
	assert.NoError(t, s.Close(), "second Close")
	_, err = s.Do(ctx, "PING")
	assert.Error(t, err, "a closed server must not answer")
	assert.ErrorIs(t, s.Restart(), ErrClosed)
}

func TestStartRegistersCleanup(t *testing.T) {
	t.Parallel()
	var pid int
	t.Run("inner", func(t *testing.T) {
		s := Start(t)
		pid = s.Pid()
		require.NotZero(t, pid)
	})
	assert.True(t, processGone(pid), "t.Cleanup did not stop pid %d", pid)
}

func TestKillRestartWithPersistenceKeepsPortAndData(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := Start(t, WithPersistence())
	port, pid := s.Port(), s.Pid()
	_, err := s.Do(ctx, "SET", "k", "v")
	require.NoError(t, err)

	require.NoError(t, s.Kill())
	assert.True(t, processGone(pid))
	assert.Zero(t, s.Pid())
	assert.False(t, s.Running())
	_, err = s.Do(ctx, "PING")
	require.Error(t, err, "a killed server must not answer")
	assert.ErrorIs(t, s.Kill(), ErrNotRunning)

	require.NoError(t, s.Restart())
	assert.Equal(t, port, s.Port())
	assert.NotEqual(t, pid, s.Pid())
	v, err := s.DoString(ctx, "GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "v", v)
}

// Only appendfsync always makes a crash lose nothing the server acknowledged: with everysec Redis may postpone
// the AOF write for up to 2 s during a slow fsync and still reply. A disk stall cannot be staged here, so this
// checks the policy the promise rests on, and that WithConfig can still choose another.
func TestWithPersistenceFsyncsBeforeReplying(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	for want, opts := range map[string][]Option{
		"always":   {WithPersistence()},
		"everysec": {WithPersistence(), WithConfig("appendfsync", "everysec")},
	} {
		s := Start(t, opts...)
		v, err := s.DoStrings(ctx, "CONFIG", "GET", "appendfsync")
		require.NoError(t, err)
		assert.Equal(t, []string{"appendfsync", want}, v)
	}
}

func TestKillRestartWithoutPersistenceLosesData(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := Start(t)
	_, err := s.Do(ctx, "SET", "k", "v")
	require.NoError(t, err)
	require.NoError(t, s.Kill())
	require.NoError(t, s.Restart())
	_, err = s.DoString(ctx, "GET", "k")
	assert.ErrorIs(t, err, ErrNil)
}

func TestRestartOfRunningServerIsGraceful(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := Start(t, WithPersistence())
	old := s.Pid()
	_, err := s.Do(ctx, "SET", "k", "v")
	require.NoError(t, err)
	require.NoError(t, s.Restart())
	assert.True(t, processGone(old))
	v, err := s.DoString(ctx, "GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "v", v)

	require.NoError(t, s.Stop())
	assert.False(t, s.Running())
	require.NoError(t, s.Stop(), "stopping a stopped server")
	require.NoError(t, s.Restart())
	assert.True(t, s.Running())
}

func TestTLSServerIsReachableWithTLSConfigOnly(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := Start(t, WithTLS())
	assert.Equal(t, "rediss://"+s.Addr(), s.URL())
	cfg := s.TLSConfig()
	require.NotNil(t, cfg)

	pong, err := s.DoString(ctx, "PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", pong)

	// A client that only trusts the CA (no client certificate) gets in too.
	cfg.Certificates = nil
	c, err := tls.Dial("tcp", s.Addr(), cfg)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	buf := make([]byte, 7)
	_, err = c.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "+PONG\r\n", string(buf))

	// Without trusting the CA the handshake fails.
	_, err = tls.Dial("tcp", s.Addr(), &tls.Config{ServerName: "127.0.0.1"})
	assert.Error(t, err)

	// Plain TCP gets no RESP answer.
	pc, err := net.Dial("tcp", s.Addr())
	require.NoError(t, err)
	defer pc.Close()
	_ = pc.SetDeadline(time.Now().Add(2 * time.Second))
	_, _ = pc.Write([]byte("PING\r\n"))
	n, _ := pc.Read(buf)
	assert.NotEqual(t, "+PONG\r\n", string(buf[:n]))
}

func TestPasswordIsRequiredAndUsed(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := Start(t, WithPassword("p a$s"))
	assert.Equal(t, "redis://:p%20a$s@"+s.Addr(), s.URL())
	pong, err := s.DoString(ctx, "PING")
	require.NoError(t, err, "Do authenticates")
	assert.Equal(t, "PONG", pong)

	_, err = doCommand(ctx, s.Addr(), nil, nil, []string{"GET", "x"})
	var re *ReplyError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "NOAUTH", re.Prefix())
	_, err = doCommand(ctx, s.Addr(), nil, []string{"wrong"}, []string{"PING"})
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "WRONGPASS", re.Prefix())
}

func TestACLUserCanAuthenticate(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := Start(t, WithACLUser("alice", "s3cret"))
	assert.Equal(t, "redis://alice:s3cret@"+s.Addr(), s.URL())
	who, err := s.DoString(ctx, "ACL", "WHOAMI")
	require.NoError(t, err)
	assert.Equal(t, "alice", who)

	_, err = doCommand(ctx, s.Addr(), nil, []string{"alice", "nope"}, []string{"PING"})
	var re *ReplyError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "WRONGPASS", re.Prefix())
}

func TestParallelServersGetDifferentPorts(t *testing.T) {
	t.Parallel()
	const n = 4
	servers := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { servers[i], errs[i] = StartServer() })
	}
	wg.Wait()
	ports := map[int]bool{}
	for i, s := range servers {
		require.NoError(t, errs[i])
		t.Cleanup(func() { _ = s.Close() })
		assert.False(t, ports[s.Port()], "port %d given twice", s.Port())
		ports[s.Port()] = true
	}
}

func TestStartRetriesAnotherPortWhenTheChosenOneIsTaken(t *testing.T) {
	// Not parallel: it replaces pickPortFunc.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	calls := 0
	pickPortFunc = func(bus bool) (int, error) {
		calls++
		if calls == 1 {
			return taken.Addr().(*net.TCPAddr).Port, nil
		}
		return pickPort(bus)
	}
	defer func() { pickPortFunc = pickPort }()

	s := Start(t)
	assert.Equal(t, 2, calls)
	assert.Equal(t, 1, s.retries)
	assert.NotEqual(t, taken.Addr().(*net.TCPAddr).Port, s.Port())
}

func TestFixedPortInUseFailsWithLogTail(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	_, err = StartServer(WithPort(taken.Addr().(*net.TCPAddr).Port))
	var se *StartError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Log, "Address already in use")
	assert.ErrorIs(t, err, errAddrInUse)
}

func TestBadConfigFailsWithLogTail(t *testing.T) {
	t.Parallel()
	_, err := StartServer(WithConfig("no-such-directive", "1"))
	var se *StartError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Error(), "no-such-directive")
}

func TestMissingRedisServerSaysHowToInstall(t *testing.T) {
	// Not parallel: it changes PATH.
	t.Setenv("PATH", t.TempDir())
	_, err := StartServer()
	require.ErrorIs(t, err, ErrNotInstalled)
	assert.Contains(t, err.Error(), "apt-get install -y redis-server")
	assert.Contains(t, err.Error(), "make deps")
}

func TestWithConfigOverridesDefaults(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := Start(t, WithConfig("maxmemory-policy", "allkeys-lru"), WithConfig("client-output-buffer-limit", "pubsub 1mb 512kb 30"))
	cfg, err := s.DoMap(ctx, "CONFIG", "GET", "maxmemory-policy")
	require.NoError(t, err)
	assert.Equal(t, "allkeys-lru", cfg["maxmemory-policy"])
	cfg, err = s.DoMap(ctx, "CONFIG", "GET", "client-output-buffer-limit")
	require.NoError(t, err)
	assert.Contains(t, cfg["client-output-buffer-limit"], "pubsub 1048576 524288 30")
}

func TestPauseFreezesAndResumeContinues(t *testing.T) {
	t.Parallel()
	s := Start(t)
	require.NoError(t, s.Pause())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := s.Do(ctx, "PING")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, s.Resume())
	pong, err := s.DoString(testCtx(t), "PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", pong)
}

func TestCloseOfPausedServerStopsIt(t *testing.T) {
	t.Parallel()
	s, err := StartServer()
	require.NoError(t, err)
	pid := s.Pid()
	require.NoError(t, s.Pause())
	start := time.Now()
	require.NoError(t, s.Close())
	assert.True(t, processGone(pid))
	t.Logf("Close of a paused server took %v", time.Since(start))
}

func TestStartErrorNamesAddrAndCause(t *testing.T) {
	e := &StartError{Addr: "127.0.0.1:1", Dir: "/d", Log: "boom", Err: errors.New("cause")}
	assert.True(t, strings.Contains(e.Error(), "127.0.0.1:1") && strings.Contains(e.Error(), "boom") && strings.Contains(e.Error(), "cause"))
	assert.Equal(t, "cause", errors.Unwrap(e).Error())
}

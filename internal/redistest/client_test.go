package redistest

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDoHelpersDecodeRealReplies(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := Start(t)

	n, err := s.DoInt(ctx, "HSET", "h", "a", "1", "b", "2")
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)
	m, err := s.DoMap(ctx, "HGETALL", "h")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "1", "b": "2"}, m)

	_, err = s.DoString(ctx, "GET", "missing")
	assert.ErrorIs(t, err, ErrNil)
	r, err := s.Do(ctx, "GET", "missing")
	require.NoError(t, err)
	assert.Equal(t, KindNil, r.Kind)

	_, err = s.Do(ctx, "LPUSH", "h", "x")
	var re *ReplyError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "WRONGTYPE", re.Prefix())

	chans, err := s.DoStrings(ctx, "PUBSUB", "CHANNELS")
	require.NoError(t, err)
	assert.Empty(t, chans)

	r, err = s.Do(ctx, "EVAL", "return {1, 'two', {3}, false}", "0")
	require.NoError(t, err)
	assert.Equal(t, "[(integer) 1 \"two\" [(integer) 3] (nil)]", r.String())
	_, err = r.Strings()
	assert.ErrorIs(t, err, ErrUnexpectedReply)

	info, err := s.Info(ctx, "server")
	require.NoError(t, err)
	assert.NotEmpty(t, info["redis_version"])

	_, err = s.Do(ctx)
	assert.Error(t, err)
}

func TestDoReturnsWhenContextEndsDuringDebugSleep(t *testing.T) {
	t.Parallel()
	s := Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(100*time.Millisecond, cancel)
	defer timer.Stop()
	start := time.Now()
	_, err := s.Do(ctx, "DEBUG", "SLEEP", "2")
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 1500*time.Millisecond)
}

func TestReadReplyRejectsMalformedInput(t *testing.T) {
	for _, in := range []string{"", "?x\r\n", ":abc\r\n", "$-2\r\n", "$3\r\nabcd\r\n", "*-5\r\n", "+OK\n", "$99999999999\r\n"} {
		_, err := readReply(bufio.NewReader(strings.NewReader(in)), 0)
		assert.Error(t, err, "input %q", in)
	}
	deep := strings.Repeat("*1\r\n", maxDepth+2) + ":1\r\n"
	_, err := readReply(bufio.NewReader(strings.NewReader(deep)), 0)
	assert.ErrorIs(t, err, errProtocol)
}

func TestReplyErrorPrefix(t *testing.T) {
	assert.Equal(t, "MOVED", (&ReplyError{Message: "MOVED 3999 127.0.0.1:6381"}).Prefix())
	assert.Equal(t, "ERR", (&ReplyError{Message: "ERR"}).Prefix())
	_ = context.Background()
}

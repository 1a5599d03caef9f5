package conn_test

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// okSteps are the handshake's steps that must be answered +OK, with how the fake recognises each one's command.
var okSteps = []struct {
	step string
	is   func(cmd []string) bool
}{
	{"AUTH", func(cmd []string) bool { return cmd[0] == "AUTH" }},
	{"SELECT", func(cmd []string) bool { return cmd[0] == "SELECT" }},
	{"CLIENT SETNAME", func(cmd []string) bool { return cmd[0] == "CLIENT" && len(cmd) > 1 && cmd[1] == "SETNAME" }},
}

// wrongAnswer is what a broken proxy or server could answer a step that wants +OK.
type wrongAnswer struct {
	name    string
	answer  string // sent first
	endless byte   // when not 0, then repeated without end
}

var wrongAnswers = []wrongAnswer{
	{"bulk string", "$2\r\nOK\r\n", 0},
	{"integer", ":1\r\n", 0},
	{"oversized line", "+", 'A'},
	{"control characters", "+OK\x1b[2J\r\n", 0},
}

// answerWrongly writes wa on c; false when c should close.
func answerWrongly(c net.Conn, wa wrongAnswer) bool {
	if wa.endless != 0 {
		return streamHostile(c, wa.answer, wa.endless)
	}
	return reply(c, wa.answer)
}

// checkWrongAnswer fails t unless err is the ErrUnavailable of a *HandshakeError at step quoting wa (truncated, and
// holding a *resp.LimitError at the handshake's 64 KiB, for an oversized one), without control characters in its
// message. A wrong answer is not a refusal: not ErrAuth, not ErrInvalidConfig.
func checkWrongAnswer(t *testing.T, err error, step string, wa wrongAnswer) {
	t.Helper()
	var he *conn.HandshakeError
	if !errors.As(err, &he) || he.Step != step || !errors.Is(err, conn.ErrUnavailable) ||
		errors.Is(err, conn.ErrAuth) || errors.Is(err, conn.ErrInvalidConfig) {
		t.Fatalf("err = %v; want ErrUnavailable with a HandshakeError at %s", err, step)
	}
	if wa.endless != 0 {
		// Refused as a reply over the handshake's 64 KiB (its line limit is the same).
		var le *resp.LimitError
		if !errors.As(err, &le) || le.Max != 64<<10 || len(he.Reply) > 200 {
			t.Fatalf("err = %v (Reply %d bytes); want a *resp.LimitError at 64 KiB and a truncated Reply", err, len(he.Reply))
		}
	} else if want := strconv.QuoteToASCII(wa.answer); he.Reply != want {
		t.Fatalf("HandshakeError.Reply = %s; want %s", he.Reply, want)
	}
	if strings.ContainsAny(err.Error(), "\x1b\r\n") {
		t.Fatalf("err = %q holds control characters", err)
	}
}

// A wrong answer to AUTH, SELECT or CLIENT SETNAME (another kind of reply, a line over the handshake's 64 KiB, an
// OK with control characters) fails New within DialTimeout with a *HandshakeError naming the step, the heap's peak
// within heapBound. With LazyConnect, New succeeds and commands fail with that error; once the server answers
// properly (the fake relays the handshake to a real redis-server), the same Client connects, with the database
// and the name the handshake set.
func TestHandshakeWrongAnswersEndToEnd(t *testing.T) {
	srv := redistest.Start(t, redistest.WithPassword("pw"))
	for _, st := range okSteps {
		for _, wa := range wrongAnswers {
			t.Run(st.step+"/"+wa.name, func(t *testing.T) {
				var wrong atomic.Bool
				wrong.Store(true)
				forward := relay(t, srv.Addr())
				f := startFake(t, func(i int, cmd []string, c net.Conn) bool {
					if wrong.Load() && st.is(cmd) {
						return answerWrongly(c, wa)
					}
					return forward(i, cmd, c)
				})
				cfg := conn.Config{Addr: f.addr(), Password: "pw", DB: 3, ClientName: "wrong-answers",
					DialTimeout: 2 * time.Second}

				stop := heapPeak()
				start := time.Now()
				c, err := conn.New(cfg)
				took := time.Since(start)
				grew := stop()
				if err == nil {
					c.Close()
					t.Fatal("New succeeded")
				}
				checkWrongAnswer(t, err, st.step, wa)
				if took >= cfg.DialTimeout {
					t.Errorf("New failed after %v, not within its %v dial timeout", took, cfg.DialTimeout)
				}
				if grew > heapBound {
					t.Errorf("the heap rose by %d bytes at its peak; want at most %d", grew, heapBound)
				}
				t.Logf("New: %v after %v; heap peak +%d KiB", err, took.Round(time.Millisecond), grew>>10)

				cfg.LazyConnect = true
				cfg.ReconnectMinBackoff, cfg.ReconnectMaxBackoff = 10*time.Millisecond, 100*time.Millisecond
				c = newClient(t, cfg)
				ctx := ctxT(t)
				start = time.Now()
				_, err = c.Do(ctx, "PING").Get(ctx)
				took = time.Since(start)
				checkWrongAnswer(t, err, st.step, wa)
				if took >= cfg.DialTimeout {
					t.Errorf("PING failed after %v, not within the %v dial timeout", took, cfg.DialTimeout)
				}
				t.Logf("lazy PING: %v after %v", err, took.Round(time.Millisecond))

				wrong.Store(false)
				eventually(t, func() error {
					_, err := c.Do(ctx, "SET", "k", "v").Get(ctx)
					return err
				})
				v, err := c.Do(ctx, "CLIENT", "INFO").Get(ctx)
				if err != nil || !strings.Contains(v.Str, " db=3 ") || !strings.Contains(v.Str, " name=wrong-answers ") {
					t.Fatalf("CLIENT INFO = %v, %v; want db=3 name=wrong-answers from the real server", v, err)
				}
			})
		}
	}
}

package conn

import (
	"errors"
	"testing"

	"github.com/locksmith-go/locksmith/resp"
)

// FuzzHandshakeReplies feeds arbitrary bytes to the handshake's reply checker, for every combination of steps
// (plan's bits: AUTH, SELECT, CLIENT SETNAME, ROLE; PING is always sent), and checks what it promises:
//   - it never panics, and consumes only bytes it has;
//   - fed all at once or byte by byte, it reaches the same outcome (done, waiting, or the same error);
//   - done means every step got its answer: +OK for AUTH, SELECT and CLIENT SETNAME, +PONG, a ROLE array saying
//     master;
//   - an error is a *HandshakeError naming one of the plan's steps, its Reply quoted in at most a few hundred
//     printable ASCII bytes (a hostile reply cannot forge a log line), matching ErrAuth, ErrInvalidConfig or
//     ErrNotMaster only for an error reply or a ROLE that is not master;
//   - waiting never holds more than the handshake's reply limit of bytes.
//
// Run it with: go test -run '^$' -fuzz '^FuzzHandshakeReplies$' ./conn
// The seed corpus is testdata/fuzz/FuzzHandshakeReplies.
func FuzzHandshakeReplies(f *testing.F) {
	f.Add([]byte("+PONG\r\n"), uint8(0))
	f.Add([]byte("+OK\r\n+OK\r\n+OK\r\n+PONG\r\n*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"), uint8(15))
	f.Fuzz(func(t *testing.T, data []byte, plan uint8) {
		cfg := &Config{}
		if plan&1 != 0 {
			cfg.Password = "pw"
		}
		if plan&2 != 0 {
			cfg.DB = 3
		}
		if plan&4 != 0 {
			cfg.ClientName = "fuzz"
		}
		master := plan&8 != 0

		h, _ := newHandshake(cfg, master)
		n, done, err := h.feed(data)
		if n < 0 || n > len(data) {
			t.Fatalf("feed consumed %d of %d bytes", n, len(data))
		}

		// Byte by byte, keeping the unconsumed rest as the dial loop does.
		h2, _ := newHandshake(cfg, master)
		var buf []byte
		var done2 bool
		var err2 error
		for i := 0; i < len(data) && !done2 && err2 == nil; i++ {
			buf = append(buf, data[i])
			var m int
			m, done2, err2 = h2.feed(buf)
			buf = buf[m:]
		}
		if done != done2 || (err == nil) != (err2 == nil) {
			t.Fatalf("%q: all at once done=%v err=%v; byte by byte done=%v err=%v", data, done, err, done2, err2)
		}

		switch {
		case err != nil:
			var he *HandshakeError
			if !errors.As(err, &he) {
				t.Fatalf("%q: error %T %v is not a *HandshakeError", data, err, err)
			}
			var he2 *HandshakeError
			if !errors.As(err2, &he2) || he2.Step != he.Step || (he.kind != he2.kind) {
				t.Fatalf("%q: all at once %v; byte by byte %v", data, err, err2)
			}
			if !planHas(h.steps, he.Step) {
				t.Fatalf("%q: error at step %q, not one of %v", data, he.Step, h.steps)
			}
			if len(he.Reply) > 4*maxQuotedReply+64 {
				t.Fatalf("%q: Reply of %d bytes", data, len(he.Reply))
			}
			for i := 0; i < len(he.Reply); i++ {
				if c := he.Reply[i]; c < 0x20 || c > 0x7e {
					t.Fatalf("%q: Reply %q holds byte %#x", data, he.Reply, c)
				}
			}
			var se *resp.ServerError
			if he.kind != nil && he.kind != ErrNotMaster && !errors.As(err, &se) {
				t.Fatalf("%q: %v is a refusal (%v) without an error reply", data, err, he.kind)
			}
			if he.kind == ErrNotMaster && he.Step != "ROLE" {
				t.Fatalf("%q: ErrNotMaster at step %s", data, he.Step)
			}
			if refused(err) && errors.Is(unavailableError("a:1", "handshake", err), ErrUnavailable) {
				t.Fatalf("%q: a refusal %v is reported as unavailable", data, err)
			}
		case done:
			checkAnswers(t, data[:n], h.steps)
		default:
			if len(data)-n > maxHandshakeReply+maxIntegerLine {
				t.Fatalf("%q: waiting with %d bytes of one reply", data, len(data)-n)
			}
		}
	})
}

// planHas reports whether steps include the one named name.
func planHas(steps []handshakeStep, name string) bool {
	for _, s := range steps {
		if s.String() == name {
			return true
		}
	}
	return false
}

// checkAnswers checks that data holds exactly the right answer to each step, in order.
func checkAnswers(t *testing.T, data []byte, steps []handshakeStep) {
	t.Helper()
	dec := resp.Decoder{Limits: handshakeLimits}
	for _, s := range steps {
		v, n, err := dec.Decode(data)
		if err != nil {
			t.Fatalf("done, but the answer to %s does not decode: %v", s, err)
		}
		data = data[n:]
		ok := false
		switch s {
		case stepPing:
			ok = v.Type == resp.SimpleString && v.Str == "PONG"
		case stepRole:
			ok = v.Type == resp.Array && len(v.Elems) > 0 && v.Elems[0].Str == "master"
		default:
			ok = v.Type == resp.SimpleString && v.Str == "OK"
		}
		if !ok {
			t.Fatalf("done, but %s was answered %v", s, v)
		}
	}
	if len(data) != 0 {
		t.Fatalf("done, but %d bytes past the answers were consumed", len(data))
	}
}

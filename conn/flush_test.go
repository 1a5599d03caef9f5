package conn_test

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
)

// withheldReplies is a fake server that answers nothing until told: it records the keys of the GETs it received,
// tells the test when it has received want of them, and, once release is closed, answers every GET (the ones it
// withheld, then each new one at once) with its key.
type withheldReplies struct {
	mu       sync.Mutex
	got      []string
	released bool
	want     int
	arrived  chan struct{} // closed when want GETs arrived
	late     chan bool     // the "late" GET arrived: whether the withheld replies had been sent by then
	release  chan struct{}
}

func newWithheldReplies(want int) *withheldReplies {
	return &withheldReplies{want: want, arrived: make(chan struct{}), late: make(chan bool, 1),
		release: make(chan struct{})}
}

func (w *withheldReplies) behave(_ int, cmd []string, c net.Conn) bool {
	if len(cmd) != 2 || cmd[0] != "GET" {
		return reply(c, "-ERR unexpected\r\n")
	}
	w.mu.Lock()
	w.got = append(w.got, cmd[1])
	n, released := len(w.got), w.released
	w.mu.Unlock()
	if cmd[1] == "late" {
		w.late <- released
	}
	if n == w.want {
		close(w.arrived)
		go w.answerWhenReleased(c) // owner: the test; returns after one write
		return true
	}
	if released {
		return reply(c, "$"+strconv.Itoa(len(cmd[1]))+"\r\n"+cmd[1]+"\r\n")
	}
	return true
}

// answerWhenReleased writes the withheld replies in one write once the test releases them.
func (w *withheldReplies) answerWhenReleased(c net.Conn) {
	<-w.release
	w.mu.Lock()
	var b strings.Builder
	for _, k := range w.got {
		b.WriteString("$" + strconv.Itoa(len(k)) + "\r\n" + k + "\r\n")
	}
	w.released = true
	w.mu.Unlock()
	_, _ = c.Write([]byte(b.String()))
}

// With a deep pipeline awaiting its replies (32 commands or more on the connection), FlushEager does not wake the
// event loop for a new command: the server is busy with the pipeline, and the loop turn that reads its replies
// writes the new command with everything else appended meanwhile. With a shallow one it writes at once.
func TestDeepPipelineNewCommandLeavesWithTheReplyTurn(t *testing.T) {
	for _, tc := range []struct {
		inFlight   int
		waitsReply bool
	}{{inFlight: 4, waitsReply: false}, {inFlight: 32, waitsReply: true}, {inFlight: 100, waitsReply: true}} {
		t.Run("in-flight="+strconv.Itoa(tc.inFlight), func(t *testing.T) {
			w := newWithheldReplies(tc.inFlight)
			f := startFake(t, w.behave)
			c := newClient(t, conn.Config{Addr: f.addr(), PoolSize: 1, DisableLatencyLane: true})
			ctx := ctxT(t)
			cmds := make([]conn.Cmd, tc.inFlight)
			for i := range cmds {
				cmds[i] = conn.Cmd{Args: []string{"GET", "k" + strconv.Itoa(i)}}
			}
			fs := c.Pipeline(ctx, cmds...)
			select {
			case <-w.arrived:
			case <-ctx.Done():
				t.Fatal("the pipeline never reached the server")
			}
			late := c.Do(ctx, "GET", "late")
			if tc.waitsReply {
				// The property is an absence: the late command must not leave before the replies. Were it
				// written at once, it would arrive within microseconds; give it ample time to show.
				select {
				case <-w.late:
					t.Fatalf("the late command was written with %d commands awaiting their replies", tc.inFlight)
				case <-time.After(200 * time.Millisecond):
				}
				close(w.release)
				if released := <-w.late; !released {
					t.Fatal("the late command arrived before the replies were sent")
				}
			} else {
				if released := <-w.late; released {
					t.Fatal("the late command waited for the replies")
				}
				close(w.release)
			}
			for i, fu := range fs {
				if v, err := fu.Get(ctx); err != nil || v.Str != "k"+strconv.Itoa(i) {
					t.Fatalf("reply %d = %v, %v", i, v, err)
				}
			}
			if v, err := late.Get(ctx); err != nil || v.Str != "late" {
				t.Fatalf("late reply = %v, %v", v, err)
			}
		})
	}
}

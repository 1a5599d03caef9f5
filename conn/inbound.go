package conn

import (
	"errors"
	"strings"

	"github.com/locksmith-go/locksmith/resp"
)

// onInbound is the reader's turn: it decodes every whole reply in data, completes their commands in FIFO order
// (pub/sub connections also dispatch push messages), and returns how many bytes it consumed (the rest is a
// partial frame to complete with the next read). A non-nil error means the stream is broken (a *resp.ProtocolError
// or ErrUnexpectedReply): the replies decoded before the fault have been delivered, and the caller must close the
// connection (reset has recorded the cause).
//
// data may alias the transport's read buffer: decoded strings are copies (resp's contract), so nothing of data is
// kept after return. Runs on the event loop (or a stream reader goroutine) and never blocks; completions run future
// callbacks and pub/sub handlers, which must not block either.
func (pc *pconn) onInbound(data []byte) (int, error) {
	vals := pc.vals[:0]
	off := 0
	var fault error
	for off < len(data) {
		v, n, err := pc.dec.Decode(data[off:])
		if err != nil {
			if !errors.Is(err, resp.ErrIncomplete) {
				fault = err
			}
			break
		}
		vals = append(vals, v)
		off += n
	}
	if len(vals) > 0 || fault != nil {
		fault = pc.deliver(vals, fault)
	}
	clear(vals) // drop the strings for the garbage collector; keep the capacity
	pc.vals = vals[:0]
	return off, fault
}

// deliver matches replies to entries and completes them. It takes mu once for the whole batch: pop the entries,
// queue NOSCRIPT resends, and mark a flush pending, since the reader's turn ends with a flush (so callers woken by
// these completions need not kick the transport). A fault (bytes that did not decode, or more replies than
// commands) resets the connection before the good replies are completed, so that callers woken by them cannot
// queue anything on the broken connection. It returns the fault.
func (pc *pconn) deliver(vals []resp.Value, fault error) error {
	replies := len(vals)
	if pc.ps != nil {
		replies = 0
		for i := range vals {
			if !pc.ps.isPush(&vals[i]) {
				replies++
			}
		}
	}

	pc.mu.Lock()
	if replies > pc.q.n {
		// A reply nobody asked for: the stream is out of step (or the peer is not Redis).
		if fault == nil {
			fault = ErrUnexpectedReply
		}
		replies = pc.q.n
	}
	popped := pc.q.popInto(pc.popped[:0], replies)
	pc.inflight.Add(-int32(replies))
	if pc.ps == nil {
		pc.handleResendsLocked(popped, vals[:replies])
		for i := range popped {
			// Entries re-sent after NOSCRIPT (kindResent) keep their watch on the re-queued copy.
			if e := &popped[i]; e.watch != nil && e.kind == kindUser {
				if stop := pc.unwatchLocked(e.watch); stop != nil {
					pc.stops = append(pc.stops, stop)
				}
			}
		}
	}
	pc.lastTurn = replies
	if pc.state == stateOpen {
		pc.flushPending = true
	}
	pc.mu.Unlock()
	pc.replies.Add(uint64(replies))
	for i, stop := range pc.stops {
		stop()
		pc.stops[i] = nil
	}
	pc.stops = pc.stops[:0]
	if fault != nil {
		pc.reset("protocol", fault)
	}
	if len(pc.reroutes) > 0 {
		pc.rt.reroute(pc.reroutes)
		clear(pc.reroutes)
		pc.reroutes = pc.reroutes[:0]
	}

	if pc.ps == nil {
		for i := range popped {
			pc.finish(&popped[i], &vals[i])
		}
	} else {
		j := 0
		for i := range vals {
			if pc.ps.isPush(&vals[i]) {
				pc.ps.dispatch(pc, &vals[i])
				continue
			}
			if j < len(popped) {
				pc.finish(&popped[j], &vals[i])
				j++
			}
		}
	}
	clear(popped)
	pc.popped = popped[:0]
	return fault
}

// finish completes one entry with its reply.
func (pc *pconn) finish(e *pending, v *resp.Value) {
	switch e.kind {
	case kindUser:
		var err error
		if v.Type == resp.ErrorReply {
			err = v.Err()
			if pc.rt != nil && pc.rt.cluster != nil && strings.HasPrefix(v.Str, "CROSSSLOT") {
				err = &CrossSlotError{Reply: err}
			}
		}
		pc.completeUser(e, *v, err)
	case kindSyncWait:
		e.op.waitDone(e.gen, *v, nil)
	case kindScriptLoad:
		if v.Type == resp.ErrorReply {
			pc.cfg.Logger.Warn("conn: SCRIPT LOAD failed", "addr", pc.addr, "sha", e.script.sha, "error", v.Str)
		}
	case kindSubscribe, kindResubscribe, kindUnsubscribe:
		pc.ps.confirm(pc, e, v)
	case kindPing, kindResent, kindAsking:
	}
}

// completeUser completes a caller's command: its promise, or for a SendAndWait its syncOp (whose WAIT reply follows).
func (pc *pconn) completeUser(e *pending, v resp.Value, err error) {
	if e.stop != nil {
		e.stop()
	}
	if e.op != nil {
		e.op.cmdDone(e.gen, v, err)
		return
	}
	pc.complete(e.p, v, err)
}

// completedMany reports whether the last reader turn completed more than one command. Reader only: the reader is
// the only writer of lastTurn, so it may read it without the mutex.
func (pc *pconn) completedMany() bool { return pc.lastTurn > 1 }

package conn

import (
	"errors"
	"math"
	"strings"

	"github.com/locksmith-go/locksmith/resp"
)

// onInbound is the reader's turn: it decodes every whole reply in data, completes their commands in FIFO order
// (pub/sub connections also dispatch push messages), and keeps the start of a reply that has not fully arrived in
// the connection's partial buffer, to be completed by the next turns: it always consumes all of data, so the
// transport's own buffer never holds more than one read. A non-nil error means the stream is broken (a
// *resp.ProtocolError, with a *resp.LimitError for a reply over Config.Limits, or ErrUnexpectedReply): the replies
// decoded before the fault have been delivered, and the caller must close the connection (reset has recorded the
// cause).
//
// data may alias the transport's read buffer: decoded strings are copies (resp's contract), and the partial buffer
// is a copy, so nothing of data is kept after return. Runs on the event loop (or a stream reader goroutine) and
// never blocks; completions run future callbacks and pub/sub handlers, which must not block either.
func (pc *pconn) onInbound(data []byte) error {
	vals := pc.vals[:0]
	var fault error
	if len(pc.partial) > 0 {
		var v resp.Value
		var done bool
		v, done, data, fault = pc.completePartial(data)
		if done {
			vals = append(vals, v)
		}
	}
	for fault == nil && len(data) > 0 {
		v, n, err := pc.dec.Decode(data)
		if err != nil {
			if errors.Is(err, resp.ErrIncomplete) {
				pc.keepPartial(data)
			} else {
				fault = err
			}
			break
		}
		vals = append(vals, v)
		data = data[n:]
	}
	if len(vals) > 0 || fault != nil {
		fault = pc.deliver(vals, fault)
	}
	clear(vals) // drop the strings for the garbage collector; keep the capacity
	pc.vals = vals[:0]
	return fault
}

// keepPartial starts the partial buffer with the first bytes of a reply that has not fully arrived, and notes how
// long it is at least (resp.Decoder.Needed). Reader only.
func (pc *pconn) keepPartial(tail []byte) {
	pc.need = pc.dec.Needed(tail)
	pc.partial = append(pc.partial[:0], tail...)
}

// completePartial adds the bytes of data that the partial reply needs and decodes it once whole. It returns the
// reply (done), the bytes of data after it, or a fault. While the reply's known minimum length (need) is not
// there, it only appends: a large bulk string is decoded once, when its last byte arrives, and the buffer is
// grown once to that exact size. The buffer never grows past the reply limit, which the decoder enforces as soon
// as the bytes show a reply over it. Reader only.
func (pc *pconn) completePartial(data []byte) (resp.Value, bool, []byte, error) {
	limit := pc.partialLimit()
	for {
		want := pc.need - len(pc.partial)
		if want > len(data) {
			pc.growPartial(pc.need, limit)
			pc.partial = append(pc.partial, data...)
			return resp.Value{}, false, nil, nil
		}
		// Take what the reply needs at least, and as much again as is buffered already, so that an array of many
		// small elements, whose need is only a lower bound, is decoded a logarithmic number of times.
		take := min(len(data), max(want, len(pc.partial)), limit-len(pc.partial))
		pc.growPartial(len(pc.partial)+take, limit)
		held := len(pc.partial)
		pc.partial = append(pc.partial, data[:take]...)
		v, n, err := pc.dec.Decode(pc.partial)
		switch {
		case err == nil:
			data = data[n-held:] // the reply may end before the bytes taken: they start the next one
			pc.dropPartial()
			return v, true, data, nil
		case !errors.Is(err, resp.ErrIncomplete):
			pc.dropPartial()
			return resp.Value{}, false, nil, err
		case len(pc.partial) >= limit:
			// Cannot happen (the decoder refuses a reply over its limit first); fail safe rather than grow.
			pc.dropPartial()
			return resp.Value{}, false, nil, errPartialTooLong
		}
		data = data[take:]
		pc.need = pc.dec.Needed(pc.partial)
		if len(data) == 0 {
			return resp.Value{}, false, nil, nil
		}
	}
}

// maxIntegerLine is the longest integer or length line ("$-9223372036854775808\r\n"): how far the decoder may
// read past the reply limit before it can tell.
const maxIntegerLine = 22

// errPartialTooLong guards the partial buffer's bound should the decoder ever let a reply grow past its limit.
var errPartialTooLong = errors.New("conn: reply longer than Config.Limits.MaxReplyLen")

// partialLimit is the most bytes the partial buffer can need: a simple-string or error line's limit plus its type
// byte and CRLF, or the reply limit (plus the integer line the decoder may read past it).
func (pc *pconn) partialLimit() int {
	limit := int(min(pc.limits.MaxReplyLen, math.MaxInt32)) + maxIntegerLine
	if t := pc.partial[0]; t == '+' || t == '-' {
		limit = min(limit, int(min(pc.limits.MaxLineLen, math.MaxInt32))+3)
	}
	return limit
}

// growPartial makes room for n bytes in the partial buffer, never more than limit: at least doubling, so that a
// reply arriving read by read costs a few allocations (at most twice its size in all), or exactly n when n is a
// whole reply's known length.
func (pc *pconn) growPartial(n, limit int) {
	if n <= cap(pc.partial) {
		return
	}
	if n < pc.need {
		n = pc.need // the reply's known length: grow once to it
	}
	n = max(n, 2*cap(pc.partial))
	if limit-n < n/4 {
		n = limit // close to the limit: one last allocation rather than two
	}
	n = min(n, limit)
	grown := make([]byte, len(pc.partial), n)
	copy(grown, pc.partial)
	pc.partial = grown
}

// dropPartial empties the partial buffer, and lets it go when it grew large for one reply.
func (pc *pconn) dropPartial() {
	pc.need = 0
	if cap(pc.partial) > maxKeptBuffer {
		pc.partial = nil
		return
	}
	pc.partial = pc.partial[:0]
}

// partialLen is how many bytes of a reply that has not fully arrived the connection holds. Reader only.
func (pc *pconn) partialLen() int { return len(pc.partial) }

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
				if stop := pc.watches.Leave(e.watch); stop != nil {
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
			if strings.HasPrefix(v.Str, "CROSSSLOT") && pc.rt != nil && pc.rt.crossSlot() {
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

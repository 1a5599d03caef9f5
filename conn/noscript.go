package conn

import (
	"strings"

	"github.com/locksmith-go/locksmith/resp"
)

// scriptLog is a FIFO byte queue holding a copy of every encoded EVALSHA still awaiting its reply, addressed by
// absolute position, so that a NOSCRIPT reply can be answered by SCRIPT LOAD and the very same bytes again.
//
// Why a copy rather than the caller's keys and args: retaining the caller's slices makes them escape, which costs
// the variadic args of every Eval a heap allocation; copying ~100-200 bytes into a reused buffer costs none. Entries
// complete in FIFO order, so consumption only ever advances the head. Guarded by the connection's mutex.
type scriptLog struct {
	buf  []byte
	base uint64 // absolute position of buf[0]
	head int    // buf[:head] is consumed
}

// add appends a copy of b and returns its absolute position.
func (l *scriptLog) add(b []byte) uint64 {
	if l.head > 0 && len(l.buf)+len(b) > cap(l.buf) && l.head >= len(l.buf)/2 {
		// Reclaim the consumed half instead of growing.
		n := copy(l.buf, l.buf[l.head:])
		l.base += uint64(l.head)
		l.buf, l.head = l.buf[:n], 0
	}
	pos := l.base + uint64(len(l.buf))
	l.buf = append(l.buf, b...)
	return pos
}

// bytes returns the n bytes logged at pos; valid until the next add or consume.
func (l *scriptLog) bytes(pos uint64, n int) []byte {
	off := int(pos - l.base)
	return l.buf[off : off+n]
}

// consume releases everything before the absolute position end.
func (l *scriptLog) consume(end uint64) {
	l.head = int(end - l.base)
	if l.head == len(l.buf) {
		l.base += uint64(len(l.buf))
		l.head = 0
		if cap(l.buf) > maxKeptBuffer {
			l.buf = nil
		} else {
			l.buf = l.buf[:0]
		}
	}
}

// reset drops everything (the connection closed).
func (l *scriptLog) reset() {
	l.base += uint64(len(l.buf))
	l.buf, l.head = nil, 0
}

// isNoScript reports whether an error reply is Redis's NOSCRIPT.
func isNoScript(v *resp.Value) bool {
	return v.Type == resp.ErrorReply && strings.HasPrefix(v.Str, "NOSCRIPT")
}

// handleResendsLocked deals, under mu, with the replies of this reader turn that mean "not run, send again":
//
//   - NOSCRIPT to an EVALSHA: SCRIPT LOAD first (once per script until its reply arrives: commands re-sent after it
//     find the script loaded, since the connection is FIFO), then the same encoded command (and, for a
//     SendAndWait, its WAIT again), on this connection; the popped entry becomes kindResent.
//   - on a connection with a router (Sentinel, cluster), a refusal (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING,
//     READONLY): the entry is taken out with a copy of its bytes and handed to the router after mu is released
//     (pc.reroutes); the popped entry becomes kindResent.
//
// It then releases the logged bytes of every popped entry. Replies to SCRIPT LOAD clear the script's marker, in
// reply order. Called by the reader on a command connection (vals and popped correspond one to one); the bytes go
// out with the flush that ends the reader's turn.
func (pc *pconn) handleResendsLocked(popped []pending, vals []resp.Value) {
	var end uint64
	logged := false
	for i := range popped {
		e := &popped[i]
		if e.kind == kindScriptLoad {
			delete(pc.loading, e.script) // later NOSCRIPTs come from a new flush: load again
			continue
		}
		if e.kind != kindUser || e.logLen == 0 {
			continue
		}
		end, logged = e.logPos+uint64(e.logLen), true
		v := &vals[i]
		if v.Type != resp.ErrorReply || e.done() {
			continue
		}
		if e.script != nil && isNoScript(v) && e.tries < maxScriptLoads {
			pc.resendAfterNoScriptLocked(e)
			continue
		}
		if pc.rt != nil {
			if k := refusalOf(v); k != refuseNone {
				r := pc.takeForResend(e, v.Err())
				r.kind, r.refusal = k, v.Str
				pc.reroutes = append(pc.reroutes, r)
			}
		}
	}
	if logged {
		pc.log.consume(end)
	}
}

// resendAfterNoScriptLocked queues SCRIPT LOAD (unless one is in flight) and the same EVALSHA bytes again for e.
func (pc *pconn) resendAfterNoScriptLocked(e *pending) {
	if !pc.loading[e.script] {
		if pc.loading == nil {
			pc.loading = make(map[*Script]bool)
		}
		pc.loading[e.script] = true
		pc.out = appendScriptLoad(pc.out, e.script)
		pc.pushLocked(pending{kind: kindScriptLoad, script: e.script})
	}
	re := *e
	re.tries++
	if re.op != nil {
		re.gen = re.op.nextGen() // the WAIT already queued after the refused attempt no longer counts
	}
	pc.out = append(pc.out, pc.log.bytes(e.logPos, e.logLen)...)
	re.logPos = pc.log.add(pc.out[len(pc.out)-e.logLen:])
	pc.pushLocked(re)
	if re.op != nil {
		pc.appendWaitLocked(re.op, re.gen)
	}
	e.kind = kindResent
}

// takeForResend copies e's logged bytes into a resend for the router and marks e kindResent; for a SendAndWait it
// starts a new attempt, so that the WAIT queued after the old one is ignored. mu held.
func (pc *pconn) takeForResend(e *pending, cause error) *resend {
	r := &resend{e: *e, raw: append([]byte(nil), pc.log.bytes(e.logPos, e.logLen)...), last: cause}
	r.e.logLen, r.e.logPos = 0, 0
	if r.e.op != nil {
		r.e.gen = r.e.op.nextGen()
	}
	e.kind = kindResent
	return r
}

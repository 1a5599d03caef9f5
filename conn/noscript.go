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

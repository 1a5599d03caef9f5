// Commands taken back to be sent again: the replies that mean "not run" (NOSCRIPT, and on a Sentinel or cluster
// Client the refusals MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING, READONLY), and the commands of a connection that
// never opened.

package conn

import (
	"strings"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// refusal is a server reply meaning that the command was not run and may be sent again.
type refusal uint8

const (
	refuseNone     refusal = iota
	refuseMoved            // MOVED slot addr: the slot lives elsewhere for good; update the map and send there
	refuseAsk              // ASK slot addr: this one command goes to addr, preceded by ASKING (slot migration)
	refuseTryAgain         // TRYAGAIN: a multi-key command during a migration; retry after a short wait
	refuseDown             // CLUSTERDOWN: the cluster cannot serve the slot now (failover in progress)
	refuseLoading          // LOADING: the server is loading its data set
	refuseReadOnly         // READONLY: a replica (an old master, demoted); the Sentinels know the new master
	unreachable            // not a reply: the command's node had no usable connection, so it was never sent
)

// refusalOf classifies an error reply.
func refusalOf(v *resp.Value) refusal {
	s := v.Str
	switch {
	case strings.HasPrefix(s, "MOVED "):
		return refuseMoved
	case strings.HasPrefix(s, "ASK "):
		return refuseAsk
	case strings.HasPrefix(s, "TRYAGAIN"):
		return refuseTryAgain
	case strings.HasPrefix(s, "CLUSTERDOWN"):
		return refuseDown
	case strings.HasPrefix(s, "LOADING"):
		return refuseLoading
	case strings.HasPrefix(s, "READONLY"):
		return refuseReadOnly
	}
	return refuseNone
}

// resend is a caller's command taken back from a connection because the server refused it without running it, or
// because it was never sent: its entry (promise or syncOp, context stop, slot, counters) and its encoded bytes.
// The router sends it again, at once (MOVED, ASK) or after a delay on the timer wheel.
type resend struct {
	e       pending
	raw     []byte
	kind    refusal
	refusal string // the refusal's text (MOVED slot addr, ...), "" for unreachable
	last    error  // what the caller gets if the retries run out
}

// failEntry fails a caller's result.
func failEntry(p *future.Promise[resp.Value], op *syncOp, err error) {
	if op != nil {
		op.fail(err)
		return
	}
	p.Fail(err)
}

// giveUp completes r's caller with r.last (the refusal, or the unavailability) and unregisters its context.
func (r *resend) giveUp() {
	if r.e.stop != nil {
		r.e.stop()
	}
	failEntry(r.e.p, r.e.op, r.last)
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

// rescueLocked takes the caller commands queued on a connection that never opened out of the fifo (marking them
// kindResent), with a copy of their bytes, for the router to send again.
func (pc *pconn) rescueLocked(cause error) []*resend {
	var out []*resend
	pc.q.each(func(e *pending) {
		if e.kind != kindUser || e.logLen == 0 || e.done() {
			return
		}
		r := pc.takeForResend(e, cause)
		r.kind = unreachable
		out = append(out, r)
	})
	return out
}

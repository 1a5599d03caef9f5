package conn

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/resp"
)

// WaitResult is the outcome of SendAndWait: the command's reply and how many replicas acknowledged it.
type WaitResult struct {
	// Reply is the command's reply.
	Reply resp.Value
	// Replicas is WAIT's reply: how many replicas acknowledged every write of the connection up to and including
	// the command, within the timeout. Meaningful only when WaitErr is nil.
	Replicas int
	// WaitErr says why there is no count although the command succeeded: ErrWaitUnsupported (the server or a proxy
	// does not know WAIT; detected once, then WAIT is no longer sent), WAIT's own error reply (a
	// *resp.ServerError), or a *ConnError when the connection dropped between the two replies.
	WaitErr error
}

// SendAndWait sends cmd followed at once by WAIT replicas timeout on the same connection, so that WAIT counts the
// replicas that received cmd's writes (Redisson's checkLockSyncedSlaves), and returns both results in one future.
// It does not block. The future fails with cmd's error (a server error reply, a *ConnError, ctx.Err(), ErrClosed)
// when cmd did not succeed; otherwise it succeeds, and WaitResult.WaitErr tells whether the count is known.
//
// It works in every topology: on a cluster the pair goes to the node of cmd's slot, and a redirection (MOVED, ASK)
// or a retry sends cmd and WAIT again as a pair, so the count always refers to the attempt that ran. replicas must
// be at least 1 and timeout between 1 ms and Config.ResponseTimeout (exclusive): WAIT holds its connection until
// the replicas answer or the timeout passes, and commands pipelined behind it on that connection wait too, so keep
// it short (tens to hundreds of milliseconds with healthy replicas). Servers and proxies without WAIT are detected
// from their first "unknown command" reply, logged once, and from then on only cmd is sent (WaitErr =
// ErrWaitUnsupported). ctx bounds the pair as in Do. Safe for concurrent use.
func (c *Client) SendAndWait(ctx context.Context, cmd Cmd, replicas int, timeout time.Duration) *future.Future[WaitResult] {
	if cmd.Script == nil && len(cmd.Args) == 0 {
		return future.Completed(WaitResult{}, ErrEmptyCommand)
	}
	if replicas < 1 || timeout < time.Millisecond || timeout >= c.cfg.ResponseTimeout {
		return future.Completed(WaitResult{}, ErrBadWait)
	}
	if err := ctx.Err(); err != nil {
		return future.Completed(WaitResult{}, err)
	}
	if c.closed.Load() {
		return future.Completed(WaitResult{}, ErrClosed)
	}
	op := &syncOp{c: c, p: future.NewPromise[WaitResult](), skip: c.waitOff.Load()}
	op.waitArgs = [3]string{"WAIT", strconv.Itoa(replicas), strconv.FormatInt(timeout.Milliseconds(), 10)}
	if done := ctx.Done(); done != nil {
		op.p.CancelledBy(done) // see afterCancel
		op.stop = context.AfterFunc(ctx, func() { op.p.Fail(ctx.Err()) })
	}
	if c.rt != nil {
		c.rt.do(nil, op, nil, cmd.Script, cmd.Keys, cmd.Args, cmd.RouteKey)
		return op.p.Future()
	}
	e := pending{op: op, kind: kindUser, slot: -1, gen: op.nextGen()}
	n := c.node
	for range len(n.pool.all) + 1 {
		pc := n.pool.pick()
		if pc == nil {
			break
		}
		if pc.send(context.Background(), e, cmd.Script, cmd.Keys, cmd.Args) == nil { // op.stop watches ctx
			return op.p.Future()
		}
	}
	op.fail(c.unavailable(n))
	return op.p.Future()
}

// syncOp is one SendAndWait in flight. Its command and its WAIT travel as two fifo entries pointing at it; each
// attempt (the first send, a NOSCRIPT resend, a redirection) has a generation, and replies of an older attempt are
// ignored. The command's reply and its WAIT's reply of one attempt come from one connection, in that order, so
// reply and gotReply are only touched by that connection's reader.
type syncOp struct {
	c        *Client
	p        *future.Promise[WaitResult]
	waitArgs [3]string
	skip     bool          // WAIT was known to be unsupported when the op started: complete on the command's reply
	stop     func() bool   // unregisters the context's AfterFunc; nil when the context cannot end
	gen      atomic.Uint32 // the current attempt

	reply    resp.Value
	gotReply bool
}

// nextGen starts a new attempt and returns its generation (as stored in entries).
func (op *syncOp) nextGen() uint8 { return uint8(op.gen.Add(1)) }

// current reports whether gen is the current attempt.
func (op *syncOp) current(gen uint8) bool { return uint8(op.gen.Load()) == gen }

// appendWaitLocked encodes the op's WAIT after its command and queues its entry (nothing when WAIT is skipped).
func (pc *pconn) appendWaitLocked(op *syncOp, gen uint8) {
	if op.skip {
		return
	}
	pc.out = resp.AppendCommand(pc.out, op.waitArgs[:]...)
	pc.pushLocked(pending{kind: kindSyncWait, op: op, gen: gen})
}

// cmdDone takes the command's reply (or failure) of attempt gen.
func (op *syncOp) cmdDone(gen uint8, v resp.Value, err error) {
	if !op.current(gen) {
		return
	}
	switch {
	case err != nil:
		op.finish(WaitResult{Reply: v}, err)
	case op.skip:
		op.finish(WaitResult{Reply: v, WaitErr: ErrWaitUnsupported}, nil)
	default:
		op.reply, op.gotReply = v, true
	}
}

// waitDone takes WAIT's reply (or the failure of its connection) of attempt gen.
func (op *syncOp) waitDone(gen uint8, v resp.Value, err error) {
	if !op.current(gen) || !op.gotReply {
		return // an older attempt's WAIT, or the command failed (the op is complete)
	}
	res := WaitResult{Reply: op.reply}
	switch {
	case err != nil:
		res.WaitErr = err
	case v.Type == resp.ErrorReply && isUnknownCommand(v.Str):
		op.c.disableWait(v.Str)
		res.WaitErr = ErrWaitUnsupported
	case v.Type == resp.ErrorReply:
		res.WaitErr = v.Err()
	case v.Type == resp.Integer:
		res.Replicas = int(v.Int)
	default:
		res.WaitErr = &resp.ServerError{Message: "unexpected WAIT reply " + v.String()}
	}
	op.finish(res, nil)
}

// fail completes the op with err (no connection, context, Close).
func (op *syncOp) fail(err error) { op.finish(WaitResult{}, err) }

// finish completes the op once, unregistering its context, recovering a callback's panic.
func (op *syncOp) finish(res WaitResult, err error) {
	if op.stop != nil {
		op.stop()
	}
	defer func() {
		if r := recover(); r != nil {
			op.c.cfg.Logger.Error("conn: panic in a future callback (callbacks run on the event loop and must not panic)",
				"panic", r)
		}
	}()
	op.p.Complete(res, err)
}

// isUnknownCommand reports whether an error reply says the command does not exist (Redis: "ERR unknown command
// 'WAIT'..."; proxies word it variously).
func isUnknownCommand(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "unknown command") || strings.Contains(m, "unsupported command") ||
		strings.Contains(m, "not supported")
}

// disableWait records that WAIT is unsupported, logging it once.
func (c *Client) disableWait(reply string) {
	if c.waitOff.CompareAndSwap(false, true) {
		c.cfg.Logger.Warn("conn: the server does not support WAIT; replica acknowledgement will not be checked",
			"reply", reply)
	}
}

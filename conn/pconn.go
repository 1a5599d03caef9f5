package conn

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/internal/ctxwatch"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/timer"
)

// connState is the life cycle of one pipelined connection. Legal transitions:
//
//	stateConnecting -> stateOpen    the dial goroutine finished the handshake and attached the transport
//	stateConnecting -> stateClosed  the connection attempt failed, or the Client was closed
//	stateOpen       -> stateClosed  the peer or the network dropped it, a protocol error or response timeout reset
//	                                it, or the Client was closed
//
// While connecting, commands are accepted and queued: they are written once the handshake is done (or fail with
// the dial error). A closed connection is never reused; its keeper creates a new one.
type connState int32

const (
	stateConnecting connState = iota
	stateOpen
	stateClosed
)

// transport is what moves a connection's bytes: a gnet event loop (gnetTransport), or a reader and a writer
// goroutine on Go's netpoller (streamTransport: TLS connections and the latency lane). The pipeline logic in pconn
// is the same over both.
type transport interface {
	// kick asks the transport's flusher (the event loop, or the writer goroutine) to call pconn.takeOut and write
	// the result soon. It does not block; safe for concurrent use. Called with pconn.mu held: if it returns a
	// doorbell, the caller must call its sound method once after releasing pconn.mu (the byte's write syscall is
	// kept out of the critical section, where other callers would queue behind it).
	kick() *doorbell
	// writeDirect writes b to the socket at once from the calling goroutine, without blocking (or, on a stream,
	// only as long as a small write to an idle socket takes), and returns how many bytes were written. ok is false
	// when the transport declines (a large batch on a stream): the caller then kicks instead. Called with pconn.mu
	// held, only when nothing else is being written.
	writeDirect(b []byte) (n int, ok bool)
	// close closes the connection without blocking; the transport then calls pconn.closed once, with the cause.
	close()
}

// connOwner is told when a connection closes, to replace it (a keeper).
type connOwner interface {
	connClosed(pc *pconn, wasOpen bool, err error)
}

// pconn is one pipelined connection: callers append encoded commands to out and push a pending entry, under mu, in
// the same order; the reader completes entries from the head of the fifo as replies arrive. It is transport-agnostic.
type pconn struct {
	addr  string
	cfg   *Config   // immutable, shared by the Client
	owner connOwner // immutable
	ps    *pubsub   // non-nil for a pub/sub connection: push messages are dispatched, not matched to the fifo
	tm    *timer.Timer
	// rt is the router of a Sentinel or cluster Client's data connection (nil otherwise: a standalone Client's, a
	// pub/sub connection). With it, every command's bytes are logged (not only EVALSHA), so that a command the
	// server refused without running it (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING, READONLY), or that was queued
	// on a connection that never opened, can be handed to rt and sent again.
	rt rerouter

	// lane decides who reads the latency lane (nil on every other connection); set by open before st says open,
	// so a picker that loaded stateOpen sees it.
	lane *laneReader

	st       atomic.Int32  // a connState mirrored from state for lock-free reads by the pool's picker
	inflight atomic.Int32  // q.n mirrored for the least-pending choice, read without mu
	replies  atomic.Uint64 // replies processed; written by the reader, read by the health check

	mu           sync.Mutex // guards the fields below
	state        connState
	tr           transport        // set once when the connection opens
	out          []byte           // encoded commands not yet taken by a flusher
	q            fifo             // one entry per command written or in out, oldest first
	log          scriptLog        // encoded EVALSHA commands awaiting replies, for resends after NOSCRIPT
	loading      map[*Script]bool // scripts with a SCRIPT LOAD in flight on this connection
	unsent       int              // entries at the tail of q whose bytes are still in out
	lastTurn     int              // replies the last reader turn completed: a hint of how many callers use it
	flushPending bool             // a flusher has been asked to write out (kick) or is about to (end of a reader turn)
	cause        error            // why the connection is being closed, set before closing it ourselves
	closeErr     error            // the error later commands fail with, once closed
	health       healthState
	check        *timer.Timeout
	watches      ctxwatch.Set[struct{}] // contexts of the commands in flight (standalone only; see ctxWatch)

	// Owned by the flusher (event loop or writer goroutine): the buffer swapped in for out at the next takeOut.
	spare []byte

	// Owned by the reader (event loop or reader goroutine).
	dec      resp.Decoder
	limits   resp.Limits   // dec's limits with the defaults applied
	partial  []byte        // the start of a reply that has not fully arrived (see onInbound)
	need     int           // the least length of that reply (resp.Decoder.Needed)
	vals     []resp.Value  // scratch: replies decoded in this turn
	popped   []pending     // scratch: their entries
	reroutes []*resend     // scratch: refused commands of this turn, for rt
	stops    []func() bool // scratch: AfterFuncs of watches released in this turn
}

// maxKeptBuffer is the capacity above which a written buffer is dropped rather than reused, so that one burst does
// not pin a large buffer per connection forever.
const maxKeptBuffer = 256 << 10

// newPconn returns a connection in stateConnecting: it queues commands until open or closed is called.
func newPconn(addr string, cfg *Config, owner connOwner, ps *pubsub, tm *timer.Timer, rt rerouter) *pconn {
	pc := &pconn{addr: addr, cfg: cfg, owner: owner, ps: ps, tm: tm, rt: rt}
	pc.dec.Limits = cfg.Limits
	pc.limits = cfg.Limits.Resolved()
	pc.st.Store(int32(stateConnecting))
	return pc
}

// usable reports whether the connection accepts commands (connecting or open), without locking.
func (pc *pconn) usable() bool { return connState(pc.st.Load()) != stateClosed }

// isOpen reports whether the connection is open, without locking.
func (pc *pconn) isOpen() bool { return connState(pc.st.Load()) == stateOpen }

// send queues one caller command, described by e (its promise or syncOp, context stop, slot), and arranges for it to
// be written; for a SendAndWait command (e.op) its WAIT follows at once. On a standalone connection, a ctx that can
// end is watched by the connection (ctxWatch); callers that watch it themselves (e.stop) pass
// context.Background(). It returns a non-nil error (and queues nothing) when the connection is closed. Safe for
// concurrent use; never blocks beyond mu and, when the connection is idle, one non-blocking write.
func (pc *pconn) send(ctx context.Context, e pending, s *Script, keys, args []string) error {
	pc.mu.Lock()
	if pc.state == stateClosed {
		err := pc.closeErr
		pc.mu.Unlock()
		return err
	}
	if pc.rt == nil && ctx.Done() != nil {
		e.watch = pc.watches.Join(ctx, pc)
	}
	pc.appendUserLocked(e, s, keys, args)
	if e.op != nil {
		pc.appendWaitLocked(e.op, e.gen)
	}
	bell := pc.flushLocked()
	lane := pc.lane // read under mu: open sets it
	pc.mu.Unlock()
	bell.sound()
	if lane != nil && !e.driven {
		lane.needBackground()
	}
	return nil
}

// sendBatch queues several caller commands contiguously, so that they leave in one write and reach the server back
// to back. es[i] describes cmds[i]; ctx is watched as in send, or the last entry carries the context stop of the
// whole batch (ctx then context.Background()). It returns a non-nil error (and queues nothing) when the connection
// is closed.
func (pc *pconn) sendBatch(ctx context.Context, es []pending, cmds []Cmd) error {
	pc.mu.Lock()
	if pc.state == stateClosed {
		err := pc.closeErr
		pc.mu.Unlock()
		return err
	}
	watch := pc.rt == nil && ctx.Done() != nil
	for i := range cmds {
		e := es[i]
		if watch {
			e.watch = pc.watches.Join(ctx, pc)
		}
		pc.appendUserLocked(e, cmds[i].Script, cmds[i].Keys, cmds[i].Args)
	}
	bell := pc.flushLocked()
	lane := pc.lane
	pc.mu.Unlock()
	bell.sound()
	if lane != nil && !es[0].driven {
		lane.needBackground()
	}
	return nil
}

// sendRaw queues an already encoded command again (a redirection or a retry from the router), preceded by ASKING
// when asking is set (ASKING applies to the next command only, and nothing can come between them under mu), and
// followed by its WAIT for a SendAndWait command. It returns a non-nil error (and queues nothing) when the
// connection is closed.
func (pc *pconn) sendRaw(e pending, raw []byte, asking bool) error {
	pc.mu.Lock()
	if pc.state == stateClosed {
		err := pc.closeErr
		pc.mu.Unlock()
		return err
	}
	if asking {
		pc.out = append(pc.out, "*1\r\n$6\r\nASKING\r\n"...)
		pc.pushLocked(pending{kind: kindAsking})
	}
	start := len(pc.out)
	pc.out = append(pc.out, raw...)
	e.logLen = len(raw)
	e.logPos = pc.log.add(pc.out[start:])
	pc.pushLocked(e)
	if e.op != nil {
		pc.appendWaitLocked(e.op, e.gen)
	}
	bell := pc.flushLocked()
	lane := pc.lane
	pc.mu.Unlock()
	bell.sound()
	if lane != nil {
		lane.needBackground()
	}
	return nil
}

// sendUntracked queues a command whose reply is not matched to an entry: SUNSUBSCRIBE, whose confirmations are
// treated as pushes because the server also sends them unasked (when a slot leaves the node). It reports false when
// the connection is closed.
func (pc *pconn) sendUntracked(args ...string) bool {
	pc.mu.Lock()
	if pc.state == stateClosed {
		pc.mu.Unlock()
		return false
	}
	pc.out = resp.AppendCommand(pc.out, args...)
	bell := pc.flushLocked()
	pc.mu.Unlock()
	bell.sound()
	return true
}

// sendInternal queues a command of the connection itself (PING, SCRIPT LOAD, SUBSCRIBE...) described by e, encoded
// from args. It reports false when the connection is closed.
func (pc *pconn) sendInternal(e pending, args ...string) bool {
	pc.mu.Lock()
	if pc.state == stateClosed {
		pc.mu.Unlock()
		return false
	}
	pc.out = resp.AppendCommand(pc.out, args...)
	pc.pushLocked(e)
	bell := pc.flushLocked()
	lane := pc.lane
	pc.mu.Unlock()
	bell.sound()
	if lane != nil {
		lane.needBackground()
	}
	return true
}

// appendUserLocked encodes a caller's command into out and queues e for it; an EVALSHA (and, on a connection with a
// router, every command) is also copied into the log for a possible resend after NOSCRIPT or a refusal.
func (pc *pconn) appendUserLocked(e pending, s *Script, keys, args []string) {
	start := len(pc.out)
	pc.out = appendCmd(pc.out, s, keys, args)
	if s != nil || pc.rt != nil {
		e.script = s
		e.logLen = len(pc.out) - start
		e.logPos = pc.log.add(pc.out[start:])
	}
	pc.pushLocked(e)
}

// pushLocked appends e to the fifo for bytes just appended to out.
func (pc *pconn) pushLocked(e pending) {
	pc.q.push(e)
	pc.unsent++
	pc.inflight.Add(1)
}

// flushLocked decides how the bytes just appended to out get written. See "Flushing" in doc.go:
//   - a flush is already pending, or the connection is still connecting: nothing to do;
//   - FlushOnReply with written commands still awaiting replies: the reader's turn that processes those replies
//     ends with a flush that will carry these bytes: nothing to do;
//   - the connection is idle: write now from this goroutine when the transport can (no event-loop hand-off);
//   - otherwise (or for any remainder) mark a flush pending and kick the transport's flusher.
//
// The kick is decided under mu on purpose: Client.Close closes every connection under its mutex before it stops
// the engine, so a kick can never reach a stopped loop; a doorbell's byte, written after unlocking, is covered by
// the doorbell's own count of pending sounds, which the engine waits for before closing it. The returned doorbell
// (nil if none) must be sounded after unlocking.
func (pc *pconn) flushLocked() *doorbell {
	if pc.flushPending || pc.state != stateOpen {
		return nil
	}
	awaiting := pc.q.n - pc.unsent
	if awaiting > 0 && pc.cfg.FlushPolicy == FlushOnReply || awaiting >= deepPipeline {
		// The turn that reads the awaited replies ends with a flush of everything appended meanwhile. Under
		// FlushEager that turn is near when a deep pipeline is in flight, and the server is busy with it till then.
		return nil
	}
	if awaiting == 0 && pc.lastTurn <= 1 {
		// Idle: nothing is being written (every taken byte has its entries in q, so awaiting would be > 0), so
		// this goroutine may write on the socket itself. Only when the last reader turn completed at most one
		// command, though: after a turn that woke many callers, more commands are about to follow this one, and
		// one doorbell flush carries them all (writing this one alone cost a syscall per batch: 7 vs 10 commands
		// per write at G=64).
		if n, ok := pc.tr.writeDirect(pc.out); ok {
			pc.unsent = 0
			if n == len(pc.out) {
				pc.out = pc.out[:0]
				return nil
			}
			// The socket buffer is full (or the write failed): hand the rest to the flusher, which also
			// detects a broken connection.
			pc.out = pc.out[:copy(pc.out, pc.out[n:])]
		}
	}
	pc.flushPending = true
	return pc.tr.kick()
}

// deepPipeline is how many commands awaiting their replies on a connection make FlushEager wait for the turn that
// reads them instead of ringing the flusher: the server has that many commands to run before it could read a new
// one, and the turn that reads their replies ends with a flush (see "Flushing" in doc.go). At 1024 goroutines on
// 2 connections this made 150 to 200 commands per write instead of about 30.
const deepPipeline = 32

// takeOut hands the bytes to write to the flusher and clears flushPending; it returns nil when there is nothing to
// write. Only the flusher calls it; after writing, the flusher passes the buffer back with recycle.
func (pc *pconn) takeOut() []byte {
	pc.mu.Lock()
	pc.flushPending = false
	buf := pc.out
	if len(buf) == 0 || pc.state != stateOpen {
		pc.mu.Unlock()
		return nil
	}
	pc.out = pc.spare
	pc.spare = nil
	pc.unsent = 0
	pc.mu.Unlock()
	return buf
}

// recycle keeps a written buffer for the next takeOut. Flusher only.
func (pc *pconn) recycle(buf []byte) {
	if cap(buf) <= maxKeptBuffer {
		pc.spare = buf[:0]
	}
}

// open attaches the transport after a successful handshake and writes whatever was queued meanwhile. It reports
// false when the connection was closed meanwhile (the Client is closing): the caller then closes the transport.
func (pc *pconn) open(tr transport) bool {
	pc.mu.Lock()
	if pc.state != stateConnecting {
		pc.mu.Unlock()
		return false
	}
	pc.tr = tr
	if st, ok := tr.(*streamTransport); ok && st.lane != nil {
		// Only a lane's field is ever written: pick may return other connections while they still connect, and
		// do reads the field of whatever pick returned (a lane only once it is open, so after this write).
		pc.lane = st.lane
	}
	pc.state = stateOpen
	pc.st.Store(int32(stateOpen))
	var bell *doorbell
	if len(pc.out) > 0 {
		bell = pc.flushLocked()
	}
	queued := pc.q.n > 0
	lane := pc.lane
	pc.scheduleCheckLocked()
	pc.mu.Unlock()
	bell.sound()
	if queued && lane != nil {
		lane.needBackground() // commands queued while connecting were not driven
	}
	return true
}

// reset closes an open connection because of cause (a protocol error, a response timeout, a write error): at once,
// without waiting for the transport to report the close, every queued and in-flight command fails with a
// *ConnError for op wrapping cause, and the owner starts the replacement, so that no caller can still queue a
// command on a connection known to be broken. The transport's own close report then finds it closed. Safe for
// concurrent use; does not block.
func (pc *pconn) reset(op string, cause error) {
	pc.mu.Lock()
	if pc.state != stateOpen || pc.cause != nil {
		pc.mu.Unlock()
		return
	}
	pc.cause = lostError(pc.addr, op, cause)
	pc.tr.close() // under mu, like every call into the transport while open (see flushLocked)
	pc.mu.Unlock()
	pc.closed(op, cause)
}

// closed is called once by the transport (or the dial goroutine, with tr == nil) when the connection is gone:
// every queued and in-flight command fails at once, with the cause recorded by reset, else with a *ConnError built
// from err. The owner is told first, so that the replacement connection exists by the time the failed futures
// complete: a caller that retries at once finds it (and queues on it) instead of failing fast.
func (pc *pconn) closed(op string, err error) { pc.closeState(op, err, stateClosed) }

// closeState implements closed; with only set to stateConnecting it acts only on a connection still connecting and
// reports whether it did.
func (pc *pconn) closeState(op string, err error, only connState) bool {
	pc.mu.Lock()
	if pc.state == stateClosed || (only == stateConnecting && pc.state != stateConnecting) {
		pc.mu.Unlock()
		return false
	}
	wasOpen := pc.state == stateOpen
	var failWith error
	switch {
	case pc.cause != nil:
		failWith = pc.cause
	case wasOpen:
		failWith = lostError(pc.addr, op, err)
	default:
		failWith = unavailableError(pc.addr, op, err)
	}
	var rescued []*resend
	if !wasOpen && pc.rt != nil {
		// Nothing queued here was ever written: the router sends it again once the topology says where.
		rescued = pc.rescueLocked(failWith)
	}
	entries, stops := pc.closeLocked(failWith)
	pc.mu.Unlock()
	for _, stop := range stops {
		stop()
	}

	if pc.owner != nil {
		pc.owner.connClosed(pc, wasOpen, failWith)
	}
	pc.failAll(entries, failWith)
	for _, r := range rescued {
		pc.rt.retryLater(r)
	}
	return true
}

// abandon closes the connection on purpose (a master switch, a node leaving the topology): an open one is reset,
// so its in-flight commands fail with a *ConnError matching ErrConnLost that wraps cause; one still connecting is
// closed, so its queued commands (never sent) fail with ErrUnavailable, or go to the router. The owner is told,
// as for any close. Does not block.
func (pc *pconn) abandon(op string, cause error) {
	for {
		pc.mu.Lock()
		st := pc.state
		pc.mu.Unlock()
		switch st {
		case stateOpen:
			pc.reset(op, cause)
			return
		case stateConnecting:
			// Only while still connecting (re-checked under mu): an open connection needs its transport closed.
			if pc.closeState(op, cause, stateConnecting) {
				return
			}
		default:
			return
		}
	}
}

// shutdown closes the connection for Client.Close: pending commands fail with ErrClosed, the owner is not told.
func (pc *pconn) shutdown() {
	pc.mu.Lock()
	if pc.state == stateClosed {
		pc.mu.Unlock()
		return
	}
	tr := pc.tr
	entries, stops := pc.closeLocked(ErrClosed)
	pc.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	pc.failAll(entries, ErrClosed)
	if tr != nil {
		tr.close()
	}
}

// closeLocked moves to stateClosed and returns the entries to fail, and the context watches' AfterFuncs to
// unregister.
func (pc *pconn) closeLocked(err error) ([]pending, []func() bool) {
	pc.state = stateClosed
	pc.st.Store(int32(stateClosed))
	pc.closeErr = err
	entries := pc.q.popInto(nil, pc.q.n)
	pc.inflight.Store(0)
	pc.out, pc.unsent, pc.flushPending = nil, 0, false
	pc.log.reset()
	pc.loading = nil
	if pc.check != nil {
		pc.check.Cancel()
		pc.check = nil
	}
	return entries, pc.watches.Close(nil)
}

// failAll completes every entry with err (outside mu: completions run callbacks).
func (pc *pconn) failAll(entries []pending, err error) {
	for i := range entries {
		e := &entries[i]
		switch e.kind {
		case kindUser:
			pc.completeUser(e, resp.Value{}, err)
		case kindSyncWait:
			e.op.waitDone(e.gen, resp.Value{}, err)
		case kindSubscribe, kindResubscribe:
			pc.ps.lost(pc, e, err)
		}
	}
}

// complete completes p, recovering a panic raised by a callback of the future so that the event loop survives a
// caller's bug; the panic is logged with its stack.
func (pc *pconn) complete(p *future.Promise[resp.Value], v resp.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			pc.cfg.Logger.Error("conn: panic in a future callback (callbacks run on the event loop and must not panic)",
				"addr", pc.addr, "panic", r)
		}
	}()
	p.Complete(v, err)
}

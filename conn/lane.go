package conn

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/locksmith-go/locksmith/future"
)

// readerRole says who may read the latency lane's socket. Exactly one goroutine reads at a time, so replies are
// decoded in order from one buffer (streamTransport.rbuf, owned by the role's holder).
type readerRole uint8

const (
	// roleNone: nobody reads. The lane is idle, or its replies await a Get that will drive it.
	roleNone readerRole = iota
	// roleDriver: a Get reads on its own goroutine (laneReader.Drive).
	roleDriver
	// roleBackground: the lane's background reader goroutine reads, as on any stream connection.
	roleBackground
)

// errInterrupted is returned by a driving Get's read when Completed or the end of Get's context interrupted it:
// nothing was read and the connection is fine.
var errInterrupted = errors.New("conn: lane read interrupted")

// aLongTimeAgo is a read deadline in the past: it makes a blocked Read return at once.
var aLongTimeAgo = time.Unix(1, 0)

// laneReader decides who reads the latency lane (see "Latency lane" in doc.go). A sequential caller's Get reads
// its own reply (future.Driver): the goroutine that waits is the one the netpoller wakes when the reply arrives,
// exactly as with a plain net.Conn, so a round trip costs no goroutine hand-off and no thread wake-up. Replies that
// no Get will drive are read by the lane's background goroutine: commands whose futures have no driver (sent by the
// router, the health check, SendAndWait), futures observed with OnComplete or Done (future calls Unattended), Gets
// that found another Get driving, and a Get whose context ended before its reply came. A reply that nobody
// observes at all (a future dropped or only polled with IsDone) is read at the latest by the health check's next
// run after a check interval without replies (fallback).
//
// The role moves only under mu, and every decision to leave the socket unread (roleNone) is taken with the
// pconn's inflight count read under mu after the senders incremented it, so a reply cannot be left without a
// reader: a sender that queues an undriven command increments inflight before it calls needBackground.
type laneReader struct {
	t *streamTransport

	mu   sync.Mutex // guards the fields below
	role readerRole
	// bgWanted: while a Get drives, some reply due on the lane will not be read by a Get (see needBackground);
	// the driver hands the role to the background reader when it stops.
	bgWanted bool
	// drvWanted: a Get wanted to drive while the background reader held the role; the background reader gives the
	// role back once nothing is due, so the next sequential round trip is driven again.
	drvWanted bool
	bgWake    chan struct{} // capacity 1: the role was handed to the background reader

	// Interrupting a driving Get blocked in Read (Completed, or its context ended): the read deadline is moved to
	// the past. kickMu orders that with the driver's entry into and exit from Read, so a deadline is never left
	// behind for the next reader.
	kickMu      sync.Mutex
	inRead      atomic.Bool // a driving Get is in, or about to enter, Read; changed under kickMu
	kicked      bool        // under kickMu: the deadline was moved to interrupt the current read
	interruptFn func()      // l.interrupt, made once: a method value passed to context.AfterFunc allocates

	// lastTurn is when a read turn last ended (monotonic nanoseconds since laneEpoch): alive probes the socket
	// only after the lane has been unread for laneProbeAfter.
	lastTurn atomic.Int64
	fd       int // the socket, for alive's peek; -1 if unknown

	handovers atomic.Uint64 // times the role went to the background reader (tests and benchmarks read it)
	rescues   atomic.Uint64 // times fallback found replies due and nobody reading (tests read it)
}

// laneEpoch is the origin of laneReader.lastTurn (time.Since reads the monotonic clock).
var laneEpoch = time.Now()

// laneProbeAfter is how long the lane may go unread before pick checks that the server has not closed it. A lane
// in roleNone has no reader, so, unlike the event-loop connections and the old always-reading lane, nothing notices
// a close by the server (a restart, its idle timeout) until a command is written on it: that command would then
// fail with ErrConnLost, "may have run", although it never reached a server. A sequential caller's next command
// follows its previous reply within microseconds and is not probed; one issued after a pause costs one
// non-blocking peek on Unix (recv MSG_PEEK|MSG_DONTWAIT, about a microsecond: lane_unix.go), elsewhere a hand-off
// to an event-loop connection while the background reader checks the socket (lane_portable.go).
const laneProbeAfter = time.Millisecond

var _ future.Driver = (*laneReader)(nil)

func newLaneReader(t *streamTransport) *laneReader {
	l := &laneReader{t: t, bgWake: make(chan struct{}, 1), fd: -1}
	l.interruptFn = l.interrupt
	l.lastTurn.Store(int64(time.Since(laneEpoch)))
	if sc, ok := t.nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { l.fd = int(fd) })
		}
	}
	return l
}

// turnEnded records the end of a read turn (see alive).
func (l *laneReader) turnEnded() { l.lastTurn.Store(int64(time.Since(laneEpoch))) }

// Drive is future.Driver: it runs on the goroutine of a Get whose future's command went over the lane, and reads
// and completes replies until target is complete, ctx ends, or nothing is due on the lane any more. When another
// goroutine holds the read role it returns at once (Get then parks and is woken by that reader).
func (l *laneReader) Drive(ctx context.Context, target future.Completion) {
	pc := l.t.pc
	if pc.inflight.Load() == 0 {
		return // the reply has been read (its completion is under way) or the connection failed
	}
	l.mu.Lock()
	switch l.role {
	case roleNone:
		l.role = roleDriver
	case roleDriver:
		// Another Get drives (two callers raced onto the idle lane): it stops at its own reply, so make it hand
		// the rest to the background reader.
		l.bgWanted = true
		l.mu.Unlock()
		return
	case roleBackground:
		l.drvWanted = true
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()

	done := ctx.Done()
	var stop func() bool
	if done != nil {
		stop = context.AfterFunc(ctx, l.interruptFn)
	}
	for {
		// inRead first, then the checks: a completer stores the result before it calls Completed, which kicks
		// only a reader that has set inRead, so either this check sees the result or Completed interrupts the
		// Read below.
		l.inRead.Store(true)
		if target.IsDone() || (done != nil && ctx.Err() != nil) || pc.inflight.Load() == 0 {
			l.endRead()
			break
		}
		if err := l.t.readTurn(true); err != nil && err != errInterrupted {
			break // the connection is gone; every pending command has failed
		}
	}
	if stop != nil {
		stop()
	}
	// Replies still due that no Get will read: the target's own when the drive stopped first (its context), or
	// replies of commands that were undriven or whose futures are already complete (cancelled: their late
	// replies are read and discarded by whoever reads). Checked before taking mu (pconn.mu comes first).
	orphans := !target.IsDone() || (pc.inflight.Load() > 0 && pc.dueWithoutDriver())
	l.release(orphans)
}

// read is a driving Get's Read: interrupted by Completed or the end of the Get's context, it returns
// errInterrupted.
func (l *laneReader) read(b []byte) (int, error) {
	n, err := l.t.nc.Read(b)
	if l.endRead() && n == 0 {
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			return 0, errInterrupted
		}
	}
	return n, err
}

// endRead leaves the read (inRead false) and reports whether it was interrupted, clearing the deadline if so.
func (l *laneReader) endRead() bool {
	l.kickMu.Lock()
	l.inRead.Store(false)
	kicked := l.kicked
	l.kicked = false
	l.kickMu.Unlock()
	if kicked {
		// No other kick can come now (inRead is false), and this goroutine still holds the role: the next
		// reader starts without a deadline.
		_ = l.t.nc.SetReadDeadline(time.Time{})
	}
	return kicked
}

// interrupt makes a driving Get's blocked Read return (errInterrupted), so that it re-checks its future and its
// context. It does nothing when no Get is reading. Safe for concurrent use; does not block.
func (l *laneReader) interrupt() {
	if !l.inRead.Load() {
		return
	}
	l.kickMu.Lock()
	if l.inRead.Load() && !l.kicked {
		l.kicked = true
		_ = l.t.nc.SetReadDeadline(aLongTimeAgo)
	}
	l.kickMu.Unlock()
}

// Completed is future.Driver: a future of the lane completed; if it was completed by someone other than the
// reader (a cancelled context), a Get driving for it must stop reading.
func (l *laneReader) Completed() { l.interrupt() }

// Unattended is future.Driver: a lane future is awaited without a Get (OnComplete, Done), so its reply must be
// read in the background.
func (l *laneReader) Unattended() { l.needBackground() }

// release ends a Get's drive. The role goes to the background reader when replies are still due that no Get will
// read: orphans (see Drive), or replies of callers who asked for it meanwhile (bgWanted).
func (l *laneReader) release(orphans bool) {
	l.mu.Lock()
	l.role = roleNone
	if l.t.pc.inflight.Load() > 0 && (l.bgWanted || orphans) {
		l.startBackgroundLocked()
	}
	l.bgWanted = false
	l.mu.Unlock()
}

// dueWithoutDriver reports whether a reply awaited on the connection belongs to no Get that will drive it: an
// internal command, an undriven one, or one whose future is already complete (its context ended).
func (pc *pconn) dueWithoutDriver() bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	orphan := false
	pc.q.each(func(e *pending) {
		if !orphan && (e.kind != kindUser || !e.driven || e.done()) {
			orphan = true
		}
	})
	return orphan
}

// needBackground is called after a command that no Get will drive was queued on the lane (and, through
// Unattended, when a lane future gets an observer that does not drive): make sure something reads its reply.
// Does not block; the caller holds no pconn mutex.
func (l *laneReader) needBackground() {
	l.mu.Lock()
	switch l.role {
	case roleNone:
		if l.t.pc.inflight.Load() > 0 {
			l.startBackgroundLocked()
		}
	case roleDriver:
		l.bgWanted = true
	}
	l.mu.Unlock()
}

// fallback is the health check's safety net for replies nobody observes: a driven command whose future is never
// waited for leaves its reply unread. Called when replies have been due for a whole check interval without one
// arriving. Does not block.
func (l *laneReader) fallback() {
	l.mu.Lock()
	if l.role == roleNone && l.t.pc.inflight.Load() > 0 {
		l.rescues.Add(1)
		l.startBackgroundLocked()
	}
	l.mu.Unlock()
}

func (l *laneReader) startBackgroundLocked() {
	l.handovers.Add(1)
	l.role = roleBackground
	l.bgWanted = false
	select {
	case l.bgWake <- struct{}{}:
	default: // cannot happen: the token is sent once per handover and taken before the reader gives the role back
	}
}

// backgroundLoop is the lane's reader goroutine: it reads while it holds the role, and gives the role back (to
// be driven again) once nothing is due and a Get asked for it. It exits when the connection fails or is closed.
func (l *laneReader) backgroundLoop(wg *sync.WaitGroup) {
	defer wg.Done()
	t := l.t
	for {
		select {
		case <-l.bgWake:
		case <-t.done:
			return
		}
		for {
			if t.readTurn(false) != nil {
				return
			}
			l.mu.Lock()
			if l.drvWanted && t.pc.inflight.Load() == 0 {
				l.role, l.drvWanted, l.bgWanted = roleNone, false, false
				l.mu.Unlock()
				break
			}
			l.mu.Unlock()
		}
	}
}

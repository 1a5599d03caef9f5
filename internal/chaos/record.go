package chaos

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Record kinds. A hold is written two or three times: an acq record as soon as the acquire returned (so that a
// worker killed with SIGKILL while holding leaves a trace of the hold it had), a rel record just before Unlock,
// and a hold record with everything once it ended. The checker keeps the hold record and falls back on the rel,
// then the acq record when the process died first.
const (
	KindAcquired = "acq"  // the lock was acquired; the hold record follows unless the process dies first
	KindHold     = "hold" // a finished hold: acquired, believed, released or lost
	// KindReleasing is written just before Unlock is called, with the hold's LastLive and Released: a worker
	// killed during the release (its lock freed, its hold record never written) has then proven that its belief
	// ended before the release, so the next holder's grant does not overlap with it.
	KindReleasing = "rel"
	KindWait      = "wait" // an acquire that ended without the lock (wait ran out, context ended, error)
	KindHung      = "hung" // an acquire still pending past its wait bound plus the tolerance, seen by the monitor
	KindStat      = "stat" // a sample of the worker process: goroutines, heap, locks it holds
	KindExit      = "exit" // the worker's last record: it stopped cleanly and wrote everything it had
)

// Hold and wait outcomes.
const (
	OutReleased    = "released"     // Unlock returned nil
	OutUnlockError = "unlock-error" // Unlock returned an error (ErrNotHeld: the lock was already gone)
	OutLost        = "lost"         // the held context was cancelled before the worker released (Err holds the cause)
	OutNotAcquired = "not-acquired" // TryLock's wait ran out (rlock.ErrNotAcquired)
	OutCtx         = "ctx"          // the acquire's context ended first (its deadline was the wait bound)
	OutError       = "error"        // the acquire failed otherwise (transport, server, closed)
	OutPending     = "pending"      // hung records: the acquire had not returned
)

// Record is one line of a worker's log (JSON, one object per line). Times are Now() readings (CLOCK_MONOTONIC
// nanoseconds, comparable across processes of the host); durations are nanoseconds.
//
// The belief of a holder is recorded with two readings around its checks of the held context, so that the checker
// can tell what is proven from what is only observed:
//
//   - LastLive: a clock reading t taken just before a check of the held context found it live (Err() == nil). The
//     context was therefore live at t (cancellation is final), and the holder believed it held the lock at least
//     from Acquired to LastLive: the proven belief interval. The worker acts on the lock only right after such a
//     check, so this is also the interval in which it acted.
//   - Cancelled: a clock reading taken just after the first check that found the context cancelled: the context
//     was cancelled before it. 0 when the worker released the lock before noticing any cancellation.
//
// A hold whose first check already found the context cancelled has LastLive 0: it was never believed.
type Record struct {
	Kind string `json:"k"`
	Lock string `json:"l,omitempty"`
	Proc int    `json:"p"`             // worker index given by the orchestrator (faults name workers by it)
	PID  int    `json:"pid,omitempty"` // the OS process id
	G    int    `json:"g"`             // goroutine index within the worker
	Seq  int64  `json:"s"`             // per-goroutine operation number: the acq and hold records of a hold share it

	Form      string `json:"f,omitempty"`  // the acquire form ("fenced:Lock", "plain:TryLock(wait,lease)", ...)
	Token     int64  `json:"t,omitempty"`  // fencing token the acquire returned
	Lease     int64  `json:"ls,omitempty"` // lease asked for; 0 = the watchdog
	WaitStart int64  `json:"ws,omitempty"` // just before the acquire call
	WaitBound int64  `json:"wb,omitempty"` // the wait the call was given (TryLock's wait, or its context's timeout)
	Acquired  int64  `json:"a,omitempty"`  // just after the acquire call returned the lock
	LastLive  int64  `json:"ll,omitempty"` // see above
	Cancelled int64  `json:"c,omitempty"`  // see above
	Released  int64  `json:"r,omitempty"`  // just before Unlock was called; 0 when it was not
	End       int64  `json:"e,omitempty"`  // wait: just after the acquire returned without the lock; hold: after Unlock

	Outcome string `json:"o,omitempty"`
	Cause   string `json:"cc,omitempty"` // context.Cause of a cancelled held context
	Err     string `json:"err,omitempty"`

	// Stat records.
	At         int64  `json:"at,omitempty"`
	Goroutines int    `json:"gr,omitempty"`
	HeapAlloc  uint64 `json:"heap,omitempty"` // bytes, after a GC
	Holding    int    `json:"hd,omitempty"`
	Ops        int64  `json:"ops,omitempty"`
	SchedMax   int64  `json:"sch,omitempty"` // the largest scheduling stall the probe saw since the last sample
}

// Log appends records to a file, one write(2) per record and no user-space buffer: a worker killed with SIGKILL
// loses only the record it was writing (the kernel keeps what was written; nothing is fsynced, since the host
// does not crash in these tests). Safe for concurrent use.
type Log struct {
	mu  sync.Mutex
	f   *os.File
	buf []byte
	err error
}

// CreateLog creates (or truncates) the log file at path.
func CreateLog(path string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("chaos: create log: %w", err)
	}
	return &Log{f: f}, nil
}

// Write appends r. It blocks for one write(2). The first error is kept and returned by Close.
func (l *Log) Write(r *Record) {
	b, err := json.Marshal(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	if err != nil {
		l.err = err
		return
	}
	l.buf = append(append(l.buf[:0], b...), '\n')
	if _, err := l.f.Write(l.buf); err != nil {
		l.err = fmt.Errorf("chaos: write log: %w", err)
	}
}

// Close closes the file and returns the first error met while writing.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	cerr := l.f.Close()
	return errors.Join(l.err, cerr)
}

// ReadRecords reads a log written by Log. A last line cut short (the worker was killed while writing it) is
// ignored; any other malformed line is an error.
func ReadRecords(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var bad error
	line := 0
	for sc.Scan() {
		line++
		if bad != nil {
			return nil, bad // a malformed line that was not the last one
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			bad = fmt.Errorf("chaos: log line %d: %w", line, err)
			continue
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("chaos: read log: %w", err)
	}
	return out, nil
}

// ReadLogFile reads the records of one log file.
func ReadLogFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("chaos: open log: %w", err)
	}
	defer f.Close()
	recs, err := ReadRecords(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}

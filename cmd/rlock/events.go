package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// Event names of -json output. Each line of -json output is one event object with at least "event" and "time_ms"
// (milliseconds since the Unix epoch); the other fields appear when they apply.
const (
	evWaiting     = "waiting"        // the lock is busy; rlock waits for it (owners, ttl_ms, wait_ms: the bound, -1 = none)
	evAcquired    = "acquired"       // the lock is held (owner, waited_ms, lease_ms; watchdog true when renewed)
	evTimeout     = "timeout"        // not acquired within -wait (waited_ms, owners, ttl_ms); exit 75
	evInterrupted = "interrupted"    // a signal ended the wait (signal); exit 128+N
	evStarted     = "started"        // the command started (pid, command)
	evSignal      = "signal"         // a signal for the command (signal, pid; from_terminal: the terminal sent it to both)
	evLost        = "lost"           // the lock stopped being held, or its fixed lease is about to, while the command ran (cause, pid, signal SIGTERM)
	evKilled      = "killed"         // the command's group outlived -grace after SIGTERM and was sent SIGKILL (pid)
	evExited      = "exited"         // the command ended (exit_code, or signal; ran_ms)
	evLeftovers   = "leftovers"      // processes the command started outlived it in its group and got SIGTERM (pid, signal)
	evReleased    = "released"       // the lock was released (held_ms)
	evReleaseFail = "release_failed" // the release failed (error; cause not_held when the lock was gone): a warning
	evStatus      = "status"         // the result of `status`
	evForced      = "force_unlocked" // the result of `force-unlock` (deleted)
	evUnlocked    = "unlocked"       // the result of `unlock` (holds_left)
	evNotHeld     = "not_held"       // `unlock`: the owner does not hold the lock
	evError       = "error"          // rlock failed (error, exit_code)
)

// event is one -json line. Fields are pointers or omitempty so that each event carries only what applies to it.
type event struct {
	Event    string   `json:"event"`
	TimeMS   int64    `json:"time_ms"`
	Name     string   `json:"name,omitempty"`
	NameB64  string   `json:"name_b64,omitempty"` // the name's bytes when it is not valid UTF-8 (see untrusted.go)
	Owner    string   `json:"owner,omitempty"`
	OwnerB64 string   `json:"owner_b64,omitempty"` // likewise for the owner id
	Locked   *bool    `json:"locked,omitempty"`
	Owners   []holder `json:"owners,omitempty"`
	Mode     string   `json:"mode,omitempty"`
	TTLMS    *int64   `json:"ttl_ms,omitempty"`
	WaitMS   *int64   `json:"wait_ms,omitempty"`
	WaitedMS *int64   `json:"waited_ms,omitempty"`
	LeaseMS  *int64   `json:"lease_ms,omitempty"`
	Watchdog bool     `json:"watchdog,omitempty"`
	PID      int      `json:"pid,omitempty"`
	Command  []string `json:"command,omitempty"`
	Signal   string   `json:"signal,omitempty"`
	Terminal bool     `json:"from_terminal,omitempty"`
	ExitCode *int     `json:"exit_code,omitempty"`
	RanMS    *int64   `json:"ran_ms,omitempty"`
	HeldMS   *int64   `json:"held_ms,omitempty"`
	Cause    string   `json:"cause,omitempty"`
	Deleted  *bool    `json:"deleted,omitempty"`
	Holds    *int64   `json:"holds_left,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// ms returns d in whole milliseconds, as a pointer for an optional field.
func ms(d time.Duration) *int64 {
	v := d.Milliseconds()
	return &v
}

func ptr[T any](v T) *T { return &v }

// kind says where a human-readable line goes and whether it is shown without -v.
type kind int

const (
	info    kind = iota // progress: shown with -v only, on the diagnostic stream
	problem             // needs attention (errors, timeouts, lost locks): always shown, on the diagnostic stream
	result              // the answer of a query: always shown, on the result stream, without the "rlock: " prefix
)

// reporter writes rlock's own output: one JSON object per line on the result stream with -json, or lines for
// people. exec uses stderr for both streams (stdout belongs to the command); the other subcommands print results
// on stdout and diagnostics on stderr. Safe for concurrent use: a line is written with one Write call, so lines
// never interleave with each other (a command sharing stderr may still write between two of them).
type reporter struct {
	mu      sync.Mutex // guards writes to out and diag
	out     io.Writer
	diag    io.Writer
	json    bool
	verbose bool
	red     *redactor        // the URL's secrets, removed from every JSON string (nil: none)
	nowFunc func() time.Time // nil: time.Now
}

// emit writes e as JSON with -json; otherwise it writes human (when not empty) as k says.
func (r *reporter) emit(e event, k kind, human string) {
	now := time.Now
	if r.nowFunc != nil {
		now = r.nowFunc
	}
	e.TimeMS = now().UnixMilli()
	var (
		line []byte
		w    = r.diag
	)
	switch {
	case r.json:
		b, err := json.Marshal(r.safeEvent(e))
		if err != nil {
			// Every field is a plain value, so Marshal cannot fail; say so rather than lose the event silently.
			b = fmt.Appendf(nil, `{"event":"error","error":%q}`, err.Error())
		}
		line, w = append(b, '\n'), r.out
	case human == "" || (k == info && !r.verbose):
		return
	case k == result:
		line, w = []byte(human+"\n"), r.out
	default:
		line = []byte("rlock: " + human + "\n")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = w.Write(line) // there is nowhere to report a failed write of rlock's own output
}

// safeEvent prepares e for JSON: the strings lose the URL's secrets (JSON escapes some characters, so the
// safeWriter could not find them in the encoded line), and a name or owner id that is not valid UTF-8 gets its
// bytes in base64 beside it.
func (r *reporter) safeEvent(e event) event {
	e.NameB64, e.OwnerB64 = base64IfInvalid(e.Name), base64IfInvalid(e.Owner)
	red := r.red.redact
	e.Name, e.Owner, e.Error, e.Mode = red(e.Name), red(e.Owner), red(e.Error), red(e.Mode)
	if e.Command != nil {
		cmd := make([]string, len(e.Command))
		for i, a := range e.Command {
			cmd[i] = red(a)
		}
		e.Command = cmd
	}
	if e.Owners != nil {
		owners := make([]holder, len(e.Owners))
		for i, h := range e.Owners {
			owners[i] = holder{Owner: red(h.Owner), OwnerB64: base64IfInvalid(h.Owner), Holds: h.Holds}
		}
		e.Owners = owners
	}
	return e
}

// fail reports f as an error event and returns its exit code.
func (r *reporter) fail(f failure, name string) int {
	r.emit(event{Event: evError, Name: name, Error: f.msg, ExitCode: ptr(f.code)}, problem, f.msg)
	return f.code
}

// say writes a line for people only: nothing with -json, where the events carry the same facts.
func (r *reporter) say(k kind, human string) {
	if !r.json {
		r.emit(event{}, k, human)
	}
}

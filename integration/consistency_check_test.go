package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/conn"
)

// The consistency checker's bookkeeping: what the callers believe they hold (beliefs), what the server holds, and
// the disagreements between the two that outlast their bound.

// holdID names one owner's holds of one lock on the server: the lock's hash and the field (the owner, or
// "<owner>:write" for a write hold).
type holdID struct{ name, field string }

// belief is what one caller believes it holds: a held context (while it is not cancelled) and its hold count.
type belief struct {
	held      context.Context
	count     int
	releasing bool     // an Unlock of it is in flight: the server may have released a hold the caller still counts
	hist      []string // what the caller did, as far as the belief (the session appends beyond it)
}

// beliefs are every caller's beliefs, by hold. Safe for concurrent use.
type beliefs struct {
	mu sync.Mutex
	m  map[holdID]*belief
}

// set records that the caller of held believes it holds id count times (0: nothing), after hist.
func (b *beliefs) set(id holdID, held context.Context, count int, hist []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if count <= 0 {
		delete(b.m, id)
		return
	}
	b.m[id] = &belief{held: held, count: count, hist: hist}
}

// releasing records that the caller is releasing one of its holds of id (until the next set).
func (b *beliefs) releasing(id holdID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bl := b.m[id]; bl != nil {
		bl.releasing = true
	}
}

// of returns the live beliefs about the lock name, by field: a belief whose held context ended is none.
func (b *beliefs) of(name string) map[string]belief {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]belief{}
	for id, bl := range b.m {
		if id.name == name && bl.held.Err() == nil {
			out[id.field] = *bl
		}
	}
	return out
}

// A discrepancy is a field whose server count and live belief differ: a phantom (the server holds more than any
// live held context believes) or a missing hold (a live held context believes more than the server holds), which
// is lost when no Unlock of it is in flight: the client released or lost a hold its caller still counts on.
const (
	phantom = "phantom"
	missing = "missing"
	lost    = "lost"
)

// discrepancy is one that has been seen, since first.
type discrepancy struct {
	kind        string
	first, last time.Time // the first and the last check that saw it
	reported    bool
}

// checker compares beliefs with the server, and records a disagreement when a discrepancy outlasts its bound: the
// orphan-release time for a phantom, the lease for a missing hold.
type checker struct {
	admin   *conn.Client // straight to the server, past every fault
	beliefs *beliefs
	bounds  map[string]time.Duration

	mu            sync.Mutex
	open          map[holdID]*discrepancy
	longest       map[string]time.Duration // the longest discrepancy of each kind that resolved in time
	disagreements []string
	checks        int
}

func newChecker(admin *conn.Client, b *beliefs, phantomBound, missingBound, lostBound time.Duration) *checker {
	return &checker{admin: admin, beliefs: b,
		bounds: map[string]time.Duration{phantom: phantomBound, missing: missingBound, lost: lostBound},
		open:   map[holdID]*discrepancy{}, longest: map[string]time.Duration{}}
}

// serverHolds reads the holds of the lock name from the server: its hash's fields but a read-write lock's "mode".
func (ck *checker) serverHolds(ctx context.Context, name string) (map[string]int, error) {
	v, err := ck.admin.Do(ctx, "HGETALL", name).Get(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		f := v.Elems[i].Str
		if f == "mode" {
			continue
		}
		n, err := strconv.Atoi(v.Elems[i+1].Str)
		if err != nil {
			return nil, fmt.Errorf("HGETALL %s: field %s: %q is not a count", name, f, v.Elems[i+1].Str)
		}
		out[f] = n
	}
	return out, nil
}

// check compares the lock name once. The beliefs are read before and after the server: a grant is on the server
// before its caller believes in it, so a hold believed in both before and after the server was read was on the
// server when it was read, unless an Unlock of it was in flight (a release leaves the server before its caller
// stops believing). Both reads must be of the same grant: an owner that released its hold and was granted the
// lock again in between (a retry through the same held context of another lock) holds it under the same field.
// A phantom (a grant not believed in yet, a release whose reply was lost) is compared with the beliefs after;
// both kinds of short-lived discrepancies are allowed by the bounds.
func (ck *checker) check(ctx context.Context, name string) error {
	before := ck.beliefs.of(name)
	server, err := ck.serverHolds(ctx, name)
	if err != nil {
		return err
	}
	believed := ck.beliefs.of(name)
	now := time.Now()
	ck.mu.Lock()
	defer ck.mu.Unlock()
	ck.checks++
	seen := map[holdID]string{}
	for f, n := range server {
		if n > believed[f].count {
			seen[holdID{name, f}] = phantom
		}
	}
	for f, bl := range believed {
		n := 0 // believed since before the server was read: by the same grant (its held context) in both reads
		if b, ok := before[f]; ok && b.held == bl.held {
			n = min(bl.count, b.count)
		}
		switch {
		case server[f] >= n:
		case bl.releasing || before[f].releasing:
			seen[holdID{name, f}] = missing
		default:
			seen[holdID{name, f}] = lost
		}
	}
	for id, d := range ck.open {
		if id.name != name {
			continue
		}
		if kind, still := seen[id]; !still || kind != d.kind {
			if lasted := d.last.Sub(d.first); !d.reported && lasted > ck.longest[d.kind] {
				ck.longest[d.kind] = lasted
			}
			delete(ck.open, id)
		}
	}
	for id, kind := range seen {
		d := ck.open[id]
		if d == nil {
			ck.open[id] = &discrepancy{kind: kind, first: now, last: now}
			continue
		}
		d.last = now
		if lasted := now.Sub(d.first); !d.reported && lasted > ck.bounds[kind] {
			d.reported = true
			bl := believed[id.field]
			ck.disagreements = append(ck.disagreements, fmt.Sprintf(
				"%s hold of %s field %s for %v (bound %v): server %d, live belief %d (%s)",
				kind, id.name, id.field, lasted.Round(time.Millisecond), ck.bounds[kind], server[id.field], bl.count,
				strings.Join(bl.hist, "; ")))
		}
	}
	return nil
}

// quiescent reports whether the server holds nothing of the names.
func (ck *checker) quiescent(ctx context.Context, names []string) (bool, error) {
	for _, name := range names {
		server, err := ck.serverHolds(ctx, name)
		if err != nil {
			return false, err
		}
		if len(server) > 0 {
			return false, nil
		}
	}
	return true, nil
}

// leftovers describes what the server still holds of the names.
func (ck *checker) leftovers(ctx context.Context, names []string) []string {
	var out []string
	for _, name := range names {
		server, err := ck.serverHolds(ctx, name)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		for f, n := range server {
			out = append(out, fmt.Sprintf("%s field %s count %d", name, f, n))
		}
	}
	return out
}

// result returns the disagreements, the number of checks, and the longest discrepancies that resolved in time.
func (ck *checker) result() ([]string, int, map[string]time.Duration) {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	longest := map[string]time.Duration{}
	for k, v := range ck.longest {
		longest[k] = v
	}
	return append([]string(nil), ck.disagreements...), ck.checks, longest
}

package workload

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/locksmith-go/locksmith/bench/internal/redisadmin"
)

// The server-side exclusion check of W2 and W4. Every holder, inside its
// critical section and on a connection of its own (not the library's), runs
// enterScript right after Lock returns and exitScript right before Unlock:
//
//   - an owner marker: enter sets <check>:holder to the holder's id with NX and
//     exit deletes it only if it still holds that id. A second holder inside
//     the section finds the marker taken (or, leaving, finds someone else's),
//     whichever process it runs in: a marker violation;
//   - a counter incremented by a read at enter and a write at exit (not an
//     atomic increment): two holders that overlap both read n and both write
//     n+1, so at the end the counter falls short of the acquisitions counted;
//   - a grant sequence (INCR at enter) that orders the grants of every process
//     on the key, from which the longest run of grants to one process comes;
//   - the previous holder's id (GETSET), which tells a re-acquisition by the
//     same goroutine across processes, and lets W4's next holder wake the
//     releaser that waits for it (RPUSH on the releaser's own list, carrying the
//     instant the lock was acquired, so the releaser measures the hand-off).
//
// The scripts touch the check's keys only, so they cost the same server work
// whatever the library; every check key is hash-tagged with the lock's name.
var (
	enterScript = newCheckScript(`-- KEYS: marker, sequence, counter, last holder; ARGV: id, marker ms, acquired-at ('' = none), wake prefix
local marked = redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
local seq = redis.call('incr', KEYS[2])
local cnt = redis.call('get', KEYS[3]) or '0'
local prev = redis.call('getset', KEYS[4], ARGV[1]) or ''
if ARGV[3] ~= '' and prev ~= '' and prev ~= ARGV[1] then
  redis.call('rpush', ARGV[4] .. prev, ARGV[3])
end
return {marked and 1 or 0, seq, cnt, prev}`)
	exitScript = newCheckScript(`-- KEYS: marker, counter; ARGV: id, counter value to write
local mine = redis.call('get', KEYS[1]) == ARGV[1]
if mine then redis.call('del', KEYS[1]) end
redis.call('set', KEYS[2], ARGV[2])
return mine and 1 or 0`)
)

// markerTTL bounds how long a marker left by a process that died inside its
// critical section blocks the key (every later entry would count a
// violation); longer than any hold.
const markerTTL = "30000"

// handoffPoll is the server-side timeout of one BLPOP of a W4 releaser
// waiting for the next holder: the wait repeats until the context ends, so
// this only bounds how late a cancelled worker notices.
const handoffPoll = "0.1"

func newCheckScript(src string) Script {
	sum := sha1.Sum([]byte(src))
	return Script{Name: "bench.check", Src: src, SHA: hex.EncodeToString(sum[:])}
}

// checkKeys are the server-side check's keys of one lock.
type checkKeys struct {
	marker, seq, counter, last, wakePrefix string
}

func newCheckKeys(lock string) checkKeys {
	p := "bench-check:{" + lock + "}:"
	return checkKeys{marker: p + "holder", seq: p + "seq", counter: p + "count", last: p + "last", wakePrefix: p + "wake:"}
}

// checker is one worker goroutine's connection for the server-side check.
// Not safe for concurrent use: each worker has its own.
type checker struct {
	c     *redisadmin.Client
	id    string       // "<process>:<goroutine>", unique across the case's processes
	calls atomic.Int64 // check scripts sent, read by the case's main goroutine at the window's edges
}

// entry is what enterScript saw.
type entry struct {
	marked bool   // the marker was free
	seq    int64  // grant sequence number on the key
	count  int64  // the counter's value read
	prev   string // previous holder's id ("" for the first grant)
}

// dialChecker connects one worker's checker and loads the scripts. It blocks,
// bounded by ctx.
func dialChecker(ctx context.Context, addr, id string) (*checker, error) {
	c, err := redisadmin.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	for _, s := range []Script{enterScript, exitScript} {
		if _, err := c.Do(ctx, "SCRIPT", "LOAD", s.Src); err != nil {
			c.Close()
			return nil, fmt.Errorf("workload: loading the check scripts: %w", err)
		}
	}
	return &checker{c: c, id: id}, nil
}

func (k *checker) close() { _ = k.c.Close() }

// eval runs s by EVALSHA, by EVAL when the server lost it (SCRIPT FLUSH).
func (k *checker) eval(ctx context.Context, s Script, keys []string, args ...string) (any, error) {
	return evalScript(ctx, k.c, s, keys, args, func() { k.calls.Add(1) })
}

// evalScript runs s on c by EVALSHA, by EVAL when the server does not have it
// (never loaded, or SCRIPT FLUSH). sent, when not nil, is called for every
// command sent.
func evalScript(ctx context.Context, c *redisadmin.Client, s Script, keys, args []string, sent func()) (any, error) {
	cmd := append([]string{"EVALSHA", s.SHA, strconv.Itoa(len(keys))}, keys...)
	cmd = append(cmd, args...)
	if sent != nil {
		sent()
	}
	v, err := c.Do(ctx, cmd...)
	if err != nil && strings.Contains(err.Error(), "NOSCRIPT") {
		cmd[0], cmd[1] = "EVAL", s.Src
		if sent != nil {
			sent()
		}
		v, err = c.Do(ctx, cmd...)
	}
	return v, err
}

// enter runs the entry half of the check. acquiredAt, when not zero, is
// pushed to the previous holder's wake list (W4).
func (k *checker) enter(ctx context.Context, keys checkKeys, acquiredAt time.Time) (entry, error) {
	stamp := ""
	if !acquiredAt.IsZero() {
		stamp = strconv.FormatInt(acquiredAt.UnixNano(), 10)
	}
	v, err := k.eval(ctx, enterScript, []string{keys.marker, keys.seq, keys.counter, keys.last},
		k.id, markerTTL, stamp, keys.wakePrefix)
	if err != nil {
		return entry{}, fmt.Errorf("workload: check on entry: %w", err)
	}
	a, ok := v.([]any)
	if !ok || len(a) != 4 {
		return entry{}, fmt.Errorf("workload: check on entry: unexpected reply %v", v)
	}
	marked, _ := a[0].(int64)
	seq, _ := a[1].(int64)
	cs, _ := a[2].(string)
	prev, _ := a[3].(string)
	count, err := strconv.ParseInt(cs, 10, 64)
	if err != nil {
		return entry{}, fmt.Errorf("workload: check on entry: counter %q: %w", cs, err)
	}
	return entry{marked: marked == 1, seq: seq, count: count, prev: prev}, nil
}

// exit runs the exit half: it writes count+1 (read on entry) and reports
// whether the marker was still this holder's.
func (k *checker) exit(ctx context.Context, keys checkKeys, e entry) (mine bool, err error) {
	v, err := k.eval(ctx, exitScript, []string{keys.marker, keys.counter}, k.id, strconv.FormatInt(e.count+1, 10))
	if err != nil {
		return false, fmt.Errorf("workload: check on exit: %w", err)
	}
	n, _ := v.(int64)
	return n == 1, nil
}

// awaitHandoff blocks until the next holder of the lock has pushed the
// instant it acquired the lock to this holder's wake list, and returns that
// instant; ok is false when ctx ended first.
func (k *checker) awaitHandoff(ctx context.Context, keys checkKeys) (at time.Time, ok bool, err error) {
	list := keys.wakePrefix + k.id
	for ctx.Err() == nil {
		v, err := k.c.Do(context.Background(), "BLPOP", list, handoffPoll)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("workload: waiting for the next holder: %w", err)
		}
		a, isArray := v.([]any)
		if !isArray || len(a) != 2 {
			continue // timed out (nil): look at ctx, wait again
		}
		s, _ := a[1].(string)
		ns, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("workload: wake-up %q: %w", s, err)
		}
		return time.Unix(0, ns), true, nil
	}
	return time.Time{}, false, nil
}

// readCounter returns a key's counter on the server (0 when never written).
func readCounter(ctx context.Context, c *redisadmin.Client, lock string) (int64, error) {
	v, err := c.Do(ctx, "GET", newCheckKeys(lock).counter)
	if err != nil {
		return 0, err
	}
	if v == nil {
		return 0, nil
	}
	s, _ := v.(string)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errors.New("workload: the check counter " + strconv.Quote(s) + " is not a number")
	}
	return n, nil
}

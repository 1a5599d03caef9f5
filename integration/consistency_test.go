package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/internal/faultproxy"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// The randomized consistency test: a client and the server never disagree about a hold for longer than the package
// promises, whatever the transport does. Several Clients (each behind its own fault proxy, as separate processes would
// be) run a mix of Lock, TryLock with wait and lease, re-entry, Unlock, LockAsync with abandonment (half of them with
// a callback that panics, which the clients must log and survive), FairLock, FencedLock and ReadWriteLock calls on a
// few names, and take a second lock through a held context (the same owner, a first hold of that lock), while faults
// are injected at random points: the connection dropped after commands were
// written, replies cut mid-frame or delayed past the response timeout, the pub/sub connection killed. After every call
// returns, every 100 ms, and at quiescence, the callers' beliefs (live held contexts and their hold counts) are
// compared with the server's hashes:
//
//   - no hold on the server that no live held context believes in, for longer than the orphan-release time
//     (phantomBound);
//   - no live held context that believes in more holds than the server has, for longer than the lease while an
//     Unlock of it is in flight (missingBound: the server may have released it, and the reply be lost), and
//     for longer than lostBound otherwise;
//   - at quiescence, nothing held on the server, nothing recorded by any client.
//
// Environment: LOCKSMITH_CONSISTENCY_SEED fixes the seed (printed on failure); LOCKSMITH_CONSISTENCY_DURATION
// (a Go duration) runs that long instead of stopping at the CI thresholds (make soak).

// ccTimings: a short response timeout makes an injected ambiguity cheap; the watchdog and leases are short so
// that a lease, when it matters, passes within the test.
const (
	ccResponseTimeout = 250 * time.Millisecond
	ccRetryDelay      = 50 * time.Millisecond
	ccWatchdog        = 3 * time.Second
	// phantomBound is the orphan-release time: a release goes out after the retry delay and is sent again, after
	// each failure, until it gets through or the grant's lease (at most the watchdog's here) has passed, when the
	// server drops the grant by itself.
	ccPhantomBound = 5 * time.Second
	// missingBound is the longest lease a hold of the test has (the watchdog's), and a second for the last reply.
	ccMissingBound = ccWatchdog + time.Second
	// lostBound is for a hold missing on the server while no Unlock of it is in flight, which nothing explains but
	// a client that released or lost a hold its caller still counts on. Such a client may learn it from a reply,
	// which the faults delay up to the response timeout: the bound.
	ccLostBound = ccResponseTimeout
	// hangBound is how long a session may take to end once the run stops: its calls are bounded by their
	// contexts (2 s), their waits and the transport's timeouts and retries, well within it.
	ccHangBound = time.Minute
)

// ccCounts are the run's counts.
type ccCounts struct {
	ops, granted, refused, ctxEnded, otherErrs atomic.Int64
	ambAcquire, ambUnlock, abandoned           atomic.Int64
	nested, nestedRetried                      atomic.Int64 // acquires through another lock's held context
	callbackPanics                             atomic.Int64 // callbacks that panicked on purpose (ccCallbackPanic)

	mu     sync.Mutex
	errors map[string]int // other errors, by their text up to the address
}

// other counts an error of no expected kind.
func (c *ccCounts) other(err error) {
	c.otherErrs.Add(1)
	msg := err.Error()
	if i := strings.Index(msg, "127.0.0.1"); i > 0 {
		msg = msg[:i]
	}
	c.mu.Lock()
	if c.errors == nil {
		c.errors = map[string]int{}
	}
	c.errors[msg]++
	c.mu.Unlock()
}

// orphanLog records why orphaned grants were left to their lease.
type orphanLog struct {
	rlock.NopObserver
	mu     sync.Mutex
	causes map[string]int
}

func (o *orphanLog) Orphan(e rlock.OrphanEvent) {
	if e.Released {
		return
	}
	msg := fmt.Sprint(e.Err)
	if i := strings.Index(msg, "127.0.0.1"); i > 0 {
		msg = msg[:i]
	}
	o.mu.Lock()
	o.causes[msg]++
	o.mu.Unlock()
}

// ccRun is one run of the test.
type ccRun struct {
	t       *testing.T
	seed    uint64
	clients []*rlock.Client
	beliefs *beliefs
	ck      *checker
	counts  ccCounts
	stop    atomic.Bool
}

func TestConsistencyUnderAmbiguousFaults(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("LOCKSMITH_CONSISTENCY_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("LOCKSMITH_CONSISTENCY_SEED=%q: %v", v, err)
		}
		seed = n
	}
	minOps, minAmb, limit := int64(10_000), int64(500), 150*time.Second
	var soak time.Duration
	if v := os.Getenv("LOCKSMITH_CONSISTENCY_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("LOCKSMITH_CONSISTENCY_DURATION=%q: %v", v, err)
		}
		soak, limit = d, d+time.Minute
	} else if testing.Short() {
		minOps, minAmb = 1_000, 50
	}
	t.Logf("consistency: seed %d (LOCKSMITH_CONSISTENCY_SEED=%d reruns it)", seed, seed)

	srv := redistest.Start(t)
	admin, err := conn.New(conn.Config{Addr: srv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	r := &ccRun{t: t, seed: seed, beliefs: &beliefs{m: map[holdID]*belief{}}}
	r.ck = newChecker(admin, r.beliefs, ccPhantomBound, ccMissingBound, ccLostBound)
	f := &faulter{admin: admin, responseTimeout: ccResponseTimeout, counts: map[string]int{}}
	const numClients, workersPerClient = 3, 5
	orphans := &orphanLog{causes: map[string]int{}}
	panics := &panicLog{}
	for i := range numClients {
		px := faultproxy.Start(t, srv.Addr())
		name := "cc-client-" + strconv.Itoa(i)
		c, err := rlock.NewClient(rlock.Config{
			// Reconnecting quickly after each fault keeps most operations reaching the server.
			Conn: conn.Config{Addr: px.Addr(), ResponseTimeout: ccResponseTimeout, ClientName: name,
				DialTimeout: time.Second, ReconnectMinBackoff: 10 * time.Millisecond,
				ReconnectMaxBackoff: 100 * time.Millisecond},
			WatchdogTimeout: ccWatchdog, RetryDelay: ccRetryDelay, Observer: orphans, Logger: slog.New(panics),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		r.clients = append(r.clients, c)
		f.proxies, f.names = append(f.proxies, px), append(f.names, name)
	}

	ctx := ctxT(t, limit+2*time.Minute)
	faultCtx, stopFaults := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Go(func() { f.run(faultCtx, seed) })
	bg.Go(func() { r.sample(faultCtx) })
	var workers sync.WaitGroup
	for i := range numClients * workersPerClient {
		workers.Go(func() { r.work(ctx, i, r.clients[i%numClients]) })
	}

	start := time.Now()
	for {
		elapsed := time.Since(start)
		done := r.counts.ops.Load() >= minOps && r.counts.ambAcquire.Load()+r.counts.ambUnlock.Load() >= minAmb
		if (soak == 0 && done) || (soak > 0 && elapsed >= soak) || elapsed >= limit {
			break
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	ran := time.Since(start)
	r.stop.Store(true)
	finished := make(chan struct{})
	go func() { workers.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(ccHangBound):
		// Written at once: a hung call may hang the clients' Close in the cleanup too, and the log with it.
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		for _, p := range panics.logged() {
			os.Stderr.WriteString("recovered panic: " + p + "\n")
		}
		t.Fatalf("seed %d: a call has not returned %v after the run stopped (every goroutine's stack and the "+
			"recovered panics above)", seed, ccHangBound)
	}
	stopFaults()
	bg.Wait()

	// Quiescence: every caller has unlocked what it believed; orphans go within the orphan-release time.
	deadline := time.Now().Add(ccPhantomBound + time.Second)
	for {
		for _, name := range ccNames {
			if err := r.ck.check(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := r.ck.quiescent(ctx, ccNames); err != nil {
			t.Fatal(err)
		} else if ok || time.Now().After(deadline) {
			break
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
	disagreements, checks, longest := r.ck.result()
	for _, l := range r.ck.leftovers(ctx, ccNames) {
		disagreements = append(disagreements, "held on the server at quiescence: "+l)
	}
	var released, expired int64
	for i, c := range r.clients {
		for end := time.Now().Add(5 * time.Second); ; sleepCtx(ctx, 20*time.Millisecond) {
			if s := c.Stats(); s.Held == 0 && s.Waiters == 0 {
				break
			} else if time.Now().After(end) {
				disagreements = append(disagreements, fmt.Sprintf("client %d at quiescence: %+v", i, s))
				break
			}
		}
		s := c.Stats()
		released, expired = released+s.OrphansReleased, expired+s.OrphansExpired
	}

	nf, byKind := f.total()
	amb := r.counts.ambAcquire.Load() + r.counts.ambUnlock.Load()
	t.Logf("consistency: seed %d, %d clients x %d goroutines, %v: %d operations (%d granted, %d refused, %d "+
		"context ended, %d async abandoned, %d other errors; %d through another lock's held context, %d of them "+
		"again after an unknown outcome); %d ambiguities (%d acquires with an unknown outcome, "+
		"%d unlocks failed on the transport) from %d faults %v; orphans released %d, left to expire %d; %d checks, "+
		"%d disagreements; longest discrepancy resolved in time (first to last check that saw it): phantom %v, "+
		"missing %v, lost %v",
		seed, numClients, workersPerClient, ran.Round(time.Second), r.counts.ops.Load(), r.counts.granted.Load(),
		r.counts.refused.Load(), r.counts.ctxEnded.Load(), r.counts.abandoned.Load(), r.counts.otherErrs.Load(),
		r.counts.nested.Load(), r.counts.nestedRetried.Load(),
		amb, r.counts.ambAcquire.Load(), r.counts.ambUnlock.Load(), nf, byKind, released, expired, checks,
		len(disagreements), longest[phantom].Round(time.Millisecond), longest[missing].Round(time.Millisecond),
		longest[lost].Round(time.Millisecond))
	r.counts.mu.Lock()
	t.Logf("other errors: %v; orphans left to expire, by cause: %v", r.counts.errors, orphans.causes)
	r.counts.mu.Unlock()
	var unexpected []string
	deliberate := int64(0)
	for _, p := range panics.logged() {
		if strings.Contains(p, ccCallbackPanic) {
			deliberate++
		} else {
			unexpected = append(unexpected, p)
		}
	}
	t.Logf("callbacks that panicked on purpose: %d, panics logged of them: %d", r.counts.callbackPanics.Load(),
		deliberate)
	if len(unexpected) > 0 {
		t.Errorf("seed %d: the clients recovered %d panics:\n  %s", seed, len(unexpected),
			strings.Join(unexpected, "\n  "))
	}
	if n := r.counts.callbackPanics.Load(); deliberate != n {
		t.Errorf("seed %d: %d callbacks panicked on purpose, and the clients logged %d of them", seed, n, deliberate)
	}
	if len(disagreements) > 0 {
		t.Errorf("seed %d: %d disagreements between the clients and the server:\n  %s", seed, len(disagreements),
			strings.Join(disagreements, "\n  "))
	}
	if r.counts.ops.Load() < minOps || amb < minAmb {
		t.Errorf("seed %d: only %d operations and %d ambiguities in %v, want at least %d and %d", seed,
			r.counts.ops.Load(), amb, ran.Round(time.Second), minOps, minAmb)
	}
}

// sample compares every lock every 100 ms until ctx ends.
func (r *ccRun) sample(ctx context.Context) {
	for sleepCtx(ctx, 100*time.Millisecond) {
		for _, name := range ccNames {
			if err := r.ck.check(ctx, name); err != nil && ctx.Err() == nil {
				r.t.Errorf("check %s: %v", name, err)
			}
		}
	}
}

// disagree records a disagreement a call's result shows by itself.
func (r *ccRun) disagree(format string, args ...any) {
	r.ck.mu.Lock()
	r.ck.disagreements = append(r.ck.disagreements, fmt.Sprintf(format, args...))
	r.ck.mu.Unlock()
}

// check compares name after a call returned.
func (r *ccRun) check(ctx context.Context, name string) {
	if err := r.ck.check(ctx, name); err != nil && ctx.Err() == nil {
		r.t.Errorf("check %s: %v", name, err)
	}
}

// work runs sessions until the run stops: acquire a lock in one of the ways a caller would, maybe re-enter it,
// maybe take a second lock through its held context (the same owner), hold them briefly, and unlock every hold it
// believes in.
func (r *ccRun) work(ctx context.Context, g int, c *rlock.Client) {
	rng := rand.New(rand.NewPCG(r.seed, uint64(g)+100))
	for !r.stop.Load() && ctx.Err() == nil {
		ti := rng.IntN(len(ccTargets))
		tg := ccTargets[ti]
		l := tg.handle(c)
		held, form, err := r.acquire(ctx, rng, l)
		r.check(ctx, tg.name)
		if err != nil {
			continue
		}
		s := r.newSession(tg, held, form)
		s.reenter(ctx, rng, l, rng.IntN(3))
		if rng.IntN(3) == 0 {
			r.nest(ctx, rng, c, ti, s)
		}
		sleepCtx(ctx, time.Duration(rng.IntN(5000))*time.Microsecond) // the work under the lock
		s.unlockAll(ctx, l)
	}
}

// ccSession is what a caller believes of its holds of one lock, and what it did, for a disagreement to show.
type ccSession struct {
	r     *ccRun
	tg    ccTarget
	id    holdID
	owner string
	held  context.Context
	count int
	hist  []string
}

// newSession starts believing in one hold of tg through held, acquired by form.
func (r *ccRun) newSession(tg ccTarget, held context.Context, form string) *ccSession {
	owner, _ := rlock.OwnerOf(held)
	s := &ccSession{r: r, tg: tg, id: holdID{tg.name, owner}, owner: owner, held: held, count: 1,
		hist: []string{form + ": held"}}
	if tg.write {
		s.id.field += ":write"
	}
	r.beliefs.set(s.id, held, 1, s.hist)
	return s
}

// reenter re-enters the session's lock n times.
func (s *ccSession) reenter(ctx context.Context, rng *rand.Rand, l ccLockAPI, n int) {
	for range n {
		again, form, err := s.r.reenter(ctx, rng, l, s.held)
		switch {
		case again == s.held:
			s.count++
		case again != nil:
			// held ended meanwhile (its lease ran out, or it was lost): the owner acquired the lock anew, with
			// a held context of its own.
			s.held, s.count = again, 1
		}
		s.hist = append(s.hist, fmt.Sprintf("re-entry by %s: %s, count %d", form, errText(err), s.count))
		s.r.beliefs.set(s.id, s.held, s.count, s.hist)
		s.r.check(ctx, s.tg.name)
	}
}

// nest takes a second lock through outer's held context, which makes its owner the outer hold's, maybe re-enters
// it, and unlocks it. Only a lock later in ccNames than the outer one is nested (one order for every caller: no
// deadlock). A caller told that the outcome is unknown tries once more, as the owner, beside the grant that may be
// left on the server.
func (r *ccRun) nest(ctx context.Context, rng *rand.Rand, c *rlock.Client, outer int, s *ccSession) {
	var later []ccTarget
	for _, tg := range ccTargets[outer+1:] {
		if tg.name != s.tg.name {
			later = append(later, tg)
		}
	}
	if len(later) == 0 {
		return
	}
	tg := later[rng.IntN(len(later))]
	l := tg.handle(c)
	for try := 0; try < 2; try++ {
		r.counts.nested.Add(1)
		if try > 0 {
			r.counts.nestedRetried.Add(1)
		}
		held, form, err := r.acquireNested(ctx, rng, l, s.held)
		r.check(ctx, tg.name)
		s.hist = append(s.hist, fmt.Sprintf("nested %s of %s: %s", form, tg.name, errText(err)))
		if err == nil {
			n := r.newSession(tg, held, "nested "+form)
			n.hist = append(append([]string(nil), s.hist...), n.hist...)
			n.reenter(ctx, rng, l, rng.IntN(2))
			n.unlockAll(ctx, l)
			return
		}
		if !errors.Is(err, rlock.ErrOutcomeUnknown) {
			return
		}
	}
}

// acquireNested takes l through outer, a held context of another lock: by Lock (given up after 2 s), by TryLock
// with a short wait (which may run out while the attempt is in flight), or by TryLock with a lease.
func (r *ccRun) acquireNested(ctx context.Context, rng *rand.Rand, l ccLockAPI,
	outer context.Context) (context.Context, string, error) {
	var held context.Context
	var err error
	var form string
	switch rng.IntN(3) {
	case 0:
		form = "Lock"
		acq, cancel := context.WithTimeout(outer, 2*time.Second)
		held, err = l.Lock(acq)
		cancel()
	case 1:
		form = "TryLock (wait)"
		held, err = l.TryLock(outer, time.Duration(1+rng.IntN(50))*time.Millisecond, 0)
	default:
		form = "TryLock (lease)"
		held, err = l.TryLock(outer, time.Duration(rng.IntN(300))*time.Millisecond, ccLease(rng))
	}
	r.counts.ops.Add(1)
	r.classify(err)
	return held, form, err
}

// unlockAll unlocks every hold the session believes in, and checks that its held context then ended.
func (s *ccSession) unlockAll(ctx context.Context, l ccLockAPI) {
	r := s.r
	for s.count > 0 {
		r.beliefs.releasing(s.id)
		err := l.Unlock(s.held)
		r.counts.ops.Add(1)
		var still *rlock.StillHeldError
		switch {
		case err == nil:
			s.count--
		case errors.Is(err, rlock.ErrNotHeld):
			s.count = 0 // lost (its held context says so)
		case errors.As(err, &still):
			r.disagree("%s: Unlock of a hold of this client's own owner left %d holds: %v", s.tg.name, still.Holds, err)
			s.count = 0
		case errors.Is(err, conn.ErrConnLost) || errors.Is(err, conn.ErrUnavailable):
			r.counts.ambUnlock.Add(1)
			s.count-- // the client no longer counts it; what the server may still count is an orphan
		default:
			r.counts.other(err)
			s.count--
		}
		s.hist = append(s.hist, fmt.Sprintf("Unlock: %s, count %d", errText(err), s.count))
		r.beliefs.set(s.id, s.held, s.count, s.hist)
		r.check(ctx, s.tg.name)
	}
	if s.held.Err() == nil {
		r.disagree("%s: the held context of %s is still live after its last Unlock (%s)", s.tg.name, s.owner,
			strings.Join(s.hist, "; "))
	}
}

// acquire takes l in a random form: Lock, TryLock (with a wait, and a lease or the watchdog), LockLease, or
// LockAsync whose Get gives up soon and which is then abandoned by cancelling its context. It returns the form's
// name too.
func (r *ccRun) acquire(ctx context.Context, rng *rand.Rand, l ccLockAPI) (context.Context, string, error) {
	acq, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var held context.Context
	var err error
	var form string
	switch rng.IntN(5) {
	case 0:
		form = "Lock"
		held, err = l.Lock(acq)
	case 1:
		form = "TryLock (watchdog)"
		held, err = l.TryLock(acq, time.Duration(rng.IntN(300))*time.Millisecond, 0)
	case 2:
		form = "TryLock (lease)"
		held, err = l.TryLock(acq, time.Duration(rng.IntN(300))*time.Millisecond, ccLease(rng))
	case 3:
		form = "LockLease"
		held, err = l.LockLease(acq, ccLease(rng))
	default:
		form = "LockAsync"
		f := l.LockAsync(acq)
		if rng.IntN(2) == 0 {
			r.panicOnCompletion(f)
		}
		wait, stop := context.WithTimeout(ctx, time.Duration(1+rng.IntN(30))*time.Millisecond)
		held, err = f.Get(wait)
		stop()
		if err != nil && ctx.Err() == nil {
			// The caller stopped waiting, not the call: its result is still the caller's. The future may have
			// completed just after Get gave up, with a grant the caller must take and unlock.
			if !f.IsDone() {
				r.counts.abandoned.Add(1)
				form = "LockAsync (abandoned)"
				cancel() // abandon it: a grant that came first is the caller's, a later one the client gives back
			}
			held, err = f.Get(ctx)
		}
	}
	r.counts.ops.Add(1)
	r.classify(err)
	return held, form, err
}

// ccCallbackPanic is the value of the panics the callers' callbacks raise on purpose: the clients log them and
// go on, and nothing else about the run may change.
const ccCallbackPanic = "cc: a caller's callback panics on purpose"

// panicOnCompletion gives f a callback that panics when the completion of f runs it: in the goroutine of the
// client's work that completed it (a reply, a hand-over, a timer, a cancellation), not in the caller's, which runs
// a callback given to a future already complete.
func (r *ccRun) panicOnCompletion(f *future.Future[context.Context]) {
	var armed atomic.Bool
	f.OnComplete(func(context.Context, error) {
		if armed.Load() {
			r.counts.callbackPanics.Add(1)
			panic(ccCallbackPanic)
		}
	})
	armed.Store(true)
}

// reenter re-enters l with held — by Lock, by TryLock without a wait, or by TryLock with a short wait — and
// returns the held context the call returned (held itself, or a new one when held had ended), nil when it failed;
// and the form's name and the call's error.
func (r *ccRun) reenter(ctx context.Context, rng *rand.Rand, l ccLockAPI,
	held context.Context) (context.Context, string, error) {
	var again context.Context
	var err error
	form := "Lock"
	switch rng.IntN(3) {
	case 0:
		again, err = l.Lock(held)
	case 1:
		form = "TryLock (lease)"
		again, err = l.TryLock(held, 0, ccLease(rng))
	default:
		// A wait that may run out while the attempt is in flight: the caller is then told that the outcome is
		// unknown while the attempt is still pending, and may re-enter again beside it.
		form = "TryLock (wait)"
		again, err = l.TryLock(held, time.Duration(1+rng.IntN(50))*time.Millisecond, 0)
	}
	r.counts.ops.Add(1)
	r.classify(err)
	if err != nil {
		return nil, form, err
	}
	return again, form, nil
}

// errText is err's text for a session's history, "ok" for nil.
func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// classify counts an acquire's outcome.
func (r *ccRun) classify(err error) {
	switch {
	case err == nil:
		r.counts.granted.Add(1)
	case errors.Is(err, rlock.ErrOutcomeUnknown):
		r.counts.ambAcquire.Add(1)
	case errors.Is(err, rlock.ErrNotAcquired):
		r.counts.refused.Add(1)
	case errors.Is(err, conn.ErrConnLost), errors.Is(err, conn.ErrUnavailable):
		r.counts.other(err) // (a conn.ErrTimeout matches context.DeadlineExceeded too)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		r.counts.ctxEnded.Add(1)
	default:
		r.counts.other(err)
	}
}

// ccLease is a lease for TryLock and LockLease: mostly a second or two, sometimes short enough to run out.
func ccLease(rng *rand.Rand) time.Duration {
	if rng.IntN(10) == 0 {
		return time.Duration(20+rng.IntN(50)) * time.Millisecond
	}
	return time.Duration(1000+rng.IntN(1000)) * time.Millisecond
}

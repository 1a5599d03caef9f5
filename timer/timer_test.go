package timer

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

const testTick = 10 * time.Millisecond

// newManualTimer returns a Timer on a manual clock, with its worker started (by a sentinel timeout far in the
// future, which also keeps the worker from parking) and asleep, ready for step.
func newManualTimer(tb testing.TB, cfg Config) (*Timer, *manualClock) {
	tb.Helper()
	c := newManualClock()
	cfg.clock = c
	tm := New(cfg)
	if _, err := tm.NewTimeout(TaskFunc(func(*Timeout) {}), 1000*time.Hour); err != nil {
		tb.Fatalf("NewTimeout(sentinel): %v", err)
	}
	c.awaitSleep(tb)
	return tm, c
}

// probe is a task that records when (on the manual clock) and how often it ran.
type probe struct {
	c        *manualClock
	deadline int64 // created + max(delay, 0)
	runs     atomic.Int32
	ranAt    atomic.Int64
	ran      chan struct{} // closed on the first run, if not nil
}

func newProbe(c *manualClock, delay time.Duration) *probe {
	return &probe{c: c, deadline: c.now() + int64(max(delay, 0))}
}

func (p *probe) Run(*Timeout) {
	p.ranAt.Store(p.c.now())
	if p.runs.Add(1) == 1 && p.ran != nil {
		close(p.ran)
	}
}

func TestTimeoutNeverRunsBeforeItsDelay(t *testing.T) {
	tm, c := newManualTimer(t, Config{Tick: testTick, WheelSize: 8}) // rotation 80 ms: most delays take rounds
	defer stopTimer(t, tm)
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() time.Duration {
		switch rng.IntN(8) {
		case 0:
			return -time.Duration(rng.Int64N(int64(time.Second)))
		case 1:
			return 0
		case 2:
			return testTick - 1
		case 3:
			return testTick
		case 4:
			return testTick + 1
		default:
			return time.Duration(rng.Int64N(int64(50 * testTick))) // up to six rotations
		}
	}
	var probes []*probe
	const maxStep = 25 * time.Millisecond
	for range 500 {
		for range 4 {
			d := pick()
			p := newProbe(c, d)
			c.schedule(t, tm, p, d)
			probes = append(probes, p)
		}
		c.step(t, 1+time.Duration(rng.Int64N(int64(maxStep))))
	}
	for range 60 { // past the longest delay
		c.step(t, testTick)
	}
	for i, p := range probes {
		if n := p.runs.Load(); n != 1 {
			t.Fatalf("probe %d ran %d times, want 1", i, n)
		}
		ran := p.ranAt.Load()
		if ran < p.deadline {
			t.Fatalf("probe %d ran %v early", i, time.Duration(p.deadline-ran))
		}
		if late := time.Duration(ran - p.deadline); late > testTick+maxStep {
			t.Fatalf("probe %d ran %v late, want at most a tick plus a clock step (%v)", i, late, testTick+maxStep)
		}
	}
}

func TestLatenessIsAtMostOneTick(t *testing.T) {
	tm, c := newManualTimer(t, Config{Tick: testTick, WheelSize: 16})
	defer stopTimer(t, tm)
	rng := rand.New(rand.NewPCG(3, 4))
	var probes []*probe
	for range 300 {
		for range 3 {
			d := time.Duration(rng.Int64N(int64(40 * testTick)))
			p := newProbe(c, d)
			c.schedule(t, tm, p, d)
			probes = append(probes, p)
		}
		c.step(t, testTick)
	}
	for range 45 {
		c.step(t, testTick)
	}
	for i, p := range probes {
		late := time.Duration(p.ranAt.Load() - p.deadline)
		if p.runs.Load() != 1 || late <= 0 || late > testTick {
			t.Fatalf("probe %d: runs %d, lateness %v; want one run, lateness in (0, %v]", i, p.runs.Load(), late, testTick)
		}
	}
}

func TestZeroAndNegativeDelaysRunAtTheEndOfTheCurrentTick(t *testing.T) {
	tm, c := newManualTimer(t, Config{Tick: testTick})
	defer stopTimer(t, tm)
	c.step(t, 4*time.Millisecond) // into the middle of tick 0; wakes nobody
	zero, neg := newProbe(c, 0), newProbe(c, -time.Hour)
	for _, p := range []*probe{zero, neg} {
		c.schedule(t, tm, p, time.Duration(p.deadline-c.now()))
	}
	c.step(t, 5*time.Millisecond) // 9 ms: tick 0 has not ended
	if zero.runs.Load()+neg.runs.Load() != 0 {
		t.Fatal("a task ran before the end of its tick")
	}
	c.step(t, time.Millisecond) // 10 ms: end of tick 0
	if zero.runs.Load() != 1 || neg.runs.Load() != 1 {
		t.Fatalf("runs after the tick ended: zero %d, negative %d; want 1 and 1", zero.runs.Load(), neg.runs.Load())
	}
}

// lagObserver records what the worker reports.
type lagObserver struct {
	mu   sync.Mutex
	lags []time.Duration
	slow []time.Duration
	who  []*Timeout
}

func (o *lagObserver) SlowTask(t *Timeout, took time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.slow = append(o.slow, took)
	o.who = append(o.who, t)
}

func (o *lagObserver) TickLag(lag time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lags = append(o.lags, lag)
}

func TestCatchUpAfterAStallVisitsEachBucketOnceAndNeverRunsEarly(t *testing.T) {
	const wheel = 16
	obs := &lagObserver{}
	tm, c := newManualTimer(t, Config{Tick: testTick, WheelSize: wheel, Observer: obs})
	defer stopTimer(t, tm)
	rng := rand.New(rand.NewPCG(5, 6))
	const rotation = wheel * testTick
	var due, later []*probe
	for range 400 {
		d := time.Duration(rng.Int64N(int64(10 * rotation)))
		p := newProbe(c, d)
		c.schedule(t, tm, p, d)
		due = append(due, p)
	}
	for range 50 {
		d := 100*rotation + time.Duration(rng.Int64N(int64(10*rotation))) // past the stall's end
		p := newProbe(c, d)
		c.schedule(t, tm, p, d)
		later = append(later, p)
	}
	c.step(t, testTick) // place them: most wait in the far ring
	before := tm.ticks.Load()
	c.step(t, 100*rotation) // one jump of 1,600 ticks, as after the process was starved
	if n := tm.ticks.Load() - before; n > wheel {
		t.Fatalf("catching up a 100-rotation stall processed %d ticks, want at most the wheel size %d", n, wheel)
	}
	// Exactly the probes whose deadline's tick has ended have run, none before its deadline.
	ended := c.now() / int64(testTick) * int64(testTick)
	for i, p := range append(due, later...) {
		want := int32(0)
		if p.deadline < ended {
			want = 1
		}
		if p.runs.Load() != want || (want == 1 && p.ranAt.Load() < p.deadline) {
			t.Fatalf("probe %d after the stall: runs %d (want %d), ran at %d, deadline %d, now %d",
				i, p.runs.Load(), want, p.ranAt.Load(), p.deadline, c.now())
		}
	}
	obs.mu.Lock()
	lags := obs.lags
	obs.mu.Unlock()
	if len(lags) != 1 || lags[0] < 99*rotation {
		t.Fatalf("TickLag reports %v, want one report of about %v", lags, 100*rotation)
	}
	for range 11 * wheel {
		c.step(t, testTick)
	}
	for i, p := range later {
		if p.runs.Load() != 1 || p.ranAt.Load() < p.deadline {
			t.Fatalf("probe %d after the stall: runs %d, ran at %d, deadline %d", i, p.runs.Load(), p.ranAt.Load(), p.deadline)
		}
	}
}

func TestSlowTaskIsReportedToTheObserver(t *testing.T) {
	obs := &lagObserver{}
	tm, c := newManualTimer(t, Config{Tick: testTick, SlowTask: 20 * time.Millisecond, Observer: obs})
	defer stopTimer(t, tm)
	quick := c.schedule(t, tm, TaskFunc(func(*Timeout) { c.advance(time.Millisecond) }), 0)
	slow := c.schedule(t, tm, TaskFunc(func(*Timeout) { c.advance(25 * time.Millisecond) }), 0)
	c.step(t, testTick)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.slow) != 1 || obs.who[0] != slow || obs.slow[0] != 25*time.Millisecond {
		t.Fatalf("SlowTask reports %v for %v; want one, of 25ms, for the slow task (quick task %p)", obs.slow, obs.who, quick)
	}
}

// slowOnly is an Observer that implements SlowTask only, the rest coming from NopObserver.
type slowOnly struct {
	NopObserver
	slow atomic.Int32
}

func (o *slowOnly) SlowTask(*Timeout, time.Duration) { o.slow.Add(1) }

func TestAnObserverEmbeddingNopObserverNeedsOnlyTheMethodsItWants(t *testing.T) {
	obs := &slowOnly{}
	tm, c := newManualTimer(t, Config{Tick: testTick, SlowTask: 20 * time.Millisecond, Observer: obs})
	defer stopTimer(t, tm)
	after := newProbe(c, 0)
	c.schedule(t, tm, TaskFunc(func(*Timeout) { c.advance(25 * time.Millisecond) }), 0) // slow
	c.step(t, testTick)
	c.schedule(t, tm, after, 0)
	c.step(t, 50*testTick) // a stall: TickLag goes to NopObserver
	if n := obs.slow.Load(); n != 1 {
		t.Errorf("SlowTask called %d times, want 1", n)
	}
	if after.runs.Load() != 1 {
		t.Errorf("a task due after the stall ran %d times, want 1", after.runs.Load())
	}
}

// bucketed counts the timeouts in the wheel. Call only while the worker sleeps (after step or awaitSleep).
func bucketed(tm *Timer) int {
	n := 0
	for i := range tm.wheel {
		for to := tm.wheel[i].ring.next; to != &tm.wheel[i].ring; to = to.next {
			n++
		}
	}
	return n
}

func TestAFloodOfAdditionsCannotStarveExpiry(t *testing.T) {
	tm, c := newManualTimer(t, Config{Tick: testTick, workPerTick: 10})
	defer stopTimer(t, tm)
	due := newProbe(c, 3*testTick)
	c.schedule(t, tm, due, 3*testTick)
	c.step(t, testTick) // due is in its bucket
	for range 1000 {
		c.schedule(t, tm, TaskFunc(func(*Timeout) {}), time.Hour)
	}
	for range 3 {
		c.step(t, testTick)
	}
	if due.runs.Load() != 1 || due.ranAt.Load() < due.deadline || due.ranAt.Load() > due.deadline+int64(testTick) {
		t.Fatalf("due: runs %d, ran at %d, deadline %d", due.runs.Load(), due.ranAt.Load(), due.deadline)
	}
	if n := bucketed(tm); n > 1+3*10 {
		t.Fatalf("%d timeouts in buckets after 3 ticks with a cap of 10 per tick", n)
	}
	for range 100 {
		c.step(t, testTick)
	}
	if n := bucketed(tm); n != 1001 { // the flood and the sentinel
		t.Fatalf("%d timeouts in buckets after the backlog drained, want 1001", n)
	}
}

func TestSameTickRunsInSubmissionOrder(t *testing.T) {
	tm, c := newManualTimer(t, Config{Tick: testTick})
	defer stopTimer(t, tm)
	var order []int // appended on the worker, read after it sleeps
	for i := range 100 {
		c.schedule(t, tm, TaskFunc(func(*Timeout) { order = append(order, i) }), testTick)
	}
	c.step(t, 2*testTick)
	if len(order) != 100 {
		t.Fatalf("%d of 100 ran", len(order))
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("run order %v, want submission order", order)
		}
	}
}

func TestCancelIsExact(t *testing.T) {
	tm, c := newManualTimer(t, Config{Tick: testTick})
	defer stopTimer(t, tm)
	a, b := newProbe(c, testTick), newProbe(c, testTick)
	ta := c.schedule(t, tm, a, testTick)
	tb := c.schedule(t, tm, b, testTick)
	if got := tm.Pending(); got != 3 {
		t.Fatalf("Pending = %d, want 3 (two and the sentinel)", got)
	}
	if !ta.Cancel() {
		t.Fatal("Cancel of a queued timeout = false")
	}
	if ta.Cancel() {
		t.Fatal("second Cancel = true")
	}
	if got := tm.Pending(); got != 2 {
		t.Fatalf("Pending after Cancel = %d, want 2", got)
	}
	c.step(t, 2*testTick)
	if a.runs.Load() != 0 || b.runs.Load() != 1 {
		t.Fatalf("runs: cancelled %d, other %d; want 0 and 1", a.runs.Load(), b.runs.Load())
	}
	if tb.Cancel() {
		t.Fatal("Cancel after the task ran = true")
	}
	if !ta.IsCancelled() || ta.IsExpired() || tb.IsCancelled() || !tb.IsExpired() {
		t.Fatalf("states: a cancelled %v expired %v, b cancelled %v expired %v",
			ta.IsCancelled(), ta.IsExpired(), tb.IsCancelled(), tb.IsExpired())
	}
	if ta.Task() != Task(a) || ta.Timer() != tm {
		t.Fatal("Task or Timer does not return what was scheduled")
	}
}

func TestCancelOfAScheduledTimeoutIsUnlinkedAtTheNextTickHandled(t *testing.T) {
	tm, c := newManualTimer(t, Config{Tick: testTick, WheelSize: 64})
	defer stopTimer(t, tm)
	near := c.schedule(t, tm, TaskFunc(func(*Timeout) { t.Error("a cancelled task ran") }), 30*testTick)
	far := c.schedule(t, tm, TaskFunc(func(*Timeout) { t.Error("a cancelled task ran") }), time.Hour)
	c.step(t, testTick)
	if near.next == nil || far.next == nil {
		t.Fatal("the timeouts are not in buckets after a tick")
	}
	// The worker is idle (sleeping until near's tick); Cancel does not wake it: the memory goes when it next
	// handles a tick (here: a timeout due sooner wakes it).
	wakes := tm.wakes.Load()
	if !c.cancel(t, tm, near) || !c.cancel(t, tm, far) {
		t.Fatal("Cancel = false")
	}
	if tm.wakes.Load() != wakes {
		t.Fatal("Cancel woke the idle worker")
	}
	c.schedule(t, tm, TaskFunc(func(*Timeout) {}), testTick)
	c.step(t, testTick)
	c.step(t, testTick)
	if near.next != nil || far.next != nil || bucketed(tm) != 1 {
		t.Fatalf("after a tick handled, the cancelled timeouts are still linked (%d in buckets, want the sentinel)",
			bucketed(tm))
	}
}

// An idle worker is not woken by a timeout due after its own wake-up, nor by cancellations, until a thousand of
// them queued up; one due sooner wakes it at once.
func TestAnIdleWorkerIsWokenOnlyWhenItMustBe(t *testing.T) {
	tm, c := newManualTimer(t, Config{Tick: testTick, WheelSize: 64})
	defer stopTimer(t, tm)
	c.schedule(t, tm, TaskFunc(func(*Timeout) {}), 50*testTick)
	c.step(t, testTick) // placed; the worker now sleeps, idle, until its tick
	if !tm.idle.Load() {
		t.Fatal("the worker is not idle with its only timeout 49 ticks away")
	}
	wakes := tm.wakes.Load()
	var later []*Timeout
	for range wakeBacklog / 2 {
		later = append(later, c.schedule(t, tm, TaskFunc(func(*Timeout) {}), 100*testTick))
	}
	for _, to := range later[:wakeBacklog/4] {
		c.cancel(t, tm, to)
	}
	if n := tm.wakes.Load() - wakes; n != 0 {
		t.Fatalf("%d wake-ups for timeouts due after the worker's own wake-up", n)
	}
	for range wakeBacklog {
		c.schedule(t, tm, TaskFunc(func(*Timeout) {}), 100*testTick)
	}
	if n := tm.wakes.Load() - wakes; n < 1 {
		t.Fatalf("a backlog of additions did not wake the worker (queued %d, idle %v until %d)", tm.queued.Load(),
			tm.idle.Load(), tm.idleUntil.Load())
	}
	c.step(t, testTick) // the backlog is placed; the worker is idle again until the first timeout's tick
	if !tm.idle.Load() {
		t.Fatal("the worker is not idle after placing the backlog")
	}
	wakes = tm.wakes.Load()
	soon := newProbe(c, testTick)
	c.schedule(t, tm, soon, testTick)
	if n := tm.wakes.Load() - wakes; n != 1 {
		t.Fatalf("a timeout due before the worker's wake-up woke it %d times, want 1", n)
	}
	c.step(t, 2*testTick)
	if soon.runs.Load() != 1 {
		t.Fatal("the timeout due soon did not run at its tick")
	}
}

func TestPendingCapRefusesTimeoutsOverTheLimit(t *testing.T) {
	tm := New(Config{MaxPending: 3})
	var tos []*Timeout
	for range 3 {
		to, err := tm.NewTimeout(TaskFunc(func(*Timeout) {}), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		tos = append(tos, to)
	}
	_, err := tm.NewTimeout(TaskFunc(func(*Timeout) {}), time.Hour)
	var limit *PendingLimitError
	if !errors.Is(err, ErrTooManyPending) || !errors.As(err, &limit) || limit.Limit != 3 {
		t.Fatalf("fourth NewTimeout: %v, want a PendingLimitError of 3 matching ErrTooManyPending", err)
	}
	if tm.Pending() != 3 {
		t.Fatalf("Pending = %d after a refusal, want 3", tm.Pending())
	}
	tos[0].Cancel()
	if _, err := tm.NewTimeout(TaskFunc(func(*Timeout) {}), time.Hour); err != nil {
		t.Fatalf("NewTimeout after a Cancel freed a slot: %v", err)
	}
	if unrun := stopTimer(t, tm); len(unrun) != 3 {
		t.Fatalf("Stop returned %d, want 3", len(unrun))
	}
}

func TestNilTaskIsAnError(t *testing.T) {
	tm := New(Config{})
	if _, err := tm.NewTimeout(nil, 0); !errors.Is(err, ErrNilTask) {
		t.Fatalf("NewTimeout(nil): %v, want ErrNilTask", err)
	}
	stopTimer(t, tm)
}

func TestHugeDelayNeverFallsDue(t *testing.T) {
	tm, c := newManualTimer(t, Config{Tick: testTick, WheelSize: 4})
	to := c.schedule(t, tm, TaskFunc(func(*Timeout) { t.Error("ran") }), math.MaxInt64)
	if to.deadline != math.MaxInt64 {
		t.Fatalf("deadline %d, want saturation at MaxInt64", to.deadline)
	}
	for range 20 {
		c.step(t, testTick)
	}
	c.step(t, 1000*time.Hour) // even past the sentinel: the catch-up must not run it
	unrun := stopTimer(t, tm)
	found := false
	for _, u := range unrun {
		found = found || u == to
	}
	if !found {
		t.Fatal("Stop did not return the never-due timeout")
	}
}

func TestRearmFromATask(t *testing.T) {
	tm := New(Config{Tick: time.Millisecond})
	defer stopTimer(t, tm)
	const runs = 30
	done := make(chan struct{})
	var n atomic.Int64
	var armed time.Time // written and read on the worker (and first by this goroutine before it is shared)
	var task Task
	task = TaskFunc(func(*Timeout) {
		if time.Since(armed) < 2*time.Millisecond {
			t.Error("a re-armed task ran early")
		}
		if n.Add(1) == runs {
			close(done)
			return
		}
		armed = time.Now()
		if _, err := tm.NewTimeout(task, 2*time.Millisecond); err != nil {
			t.Error(err)
		}
	})
	armed = time.Now()
	if _, err := tm.NewTimeout(task, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	awaitProgress(t, "re-arm chain", done, n.Load, 10*time.Second)
}

func TestConfigDefaultsAndRounding(t *testing.T) {
	for _, tc := range []struct {
		in               Config
		tick             time.Duration
		wheel            int
		maxPending, slow int64
	}{
		{Config{}, DefaultTick, DefaultWheelSize, 0, int64(DefaultSlowTask)},
		{Config{Tick: time.Microsecond, WheelSize: 1000, MaxPending: -5}, MinTick, 1024, 0, int64(DefaultSlowTask)},
		{Config{Tick: 100 * time.Millisecond, WheelSize: 1, SlowTask: time.Second}, 100 * time.Millisecond, 1, 0, int64(time.Second)},
		{Config{WheelSize: 513, MaxPending: 7}, DefaultTick, 1024, 7, int64(DefaultSlowTask)},
		{Config{WheelSize: math.MaxInt}, DefaultTick, MaxWheelSize, 0, int64(DefaultSlowTask)},
	} {
		tm := New(tc.in)
		if time.Duration(tm.tick) != tc.tick || int(tm.mask+1) != tc.wheel || tm.maxPending != tc.maxPending || tm.slowTask != tc.slow {
			t.Errorf("New(%+v): tick %v wheel %d maxPending %d slow %v; want %v %d %d %v", tc.in,
				time.Duration(tm.tick), tm.mask+1, tm.maxPending, time.Duration(tm.slowTask), tc.tick, tc.wheel, tc.maxPending, time.Duration(tc.slow))
		}
	}
}

func TestTimeoutIsOneCacheLine(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("layout target is for 64-bit platforms")
	}
	if s := unsafe.Sizeof(Timeout{}); s != 64 {
		t.Fatalf("Timeout is %d bytes, want 64 (the heap target is 100 B per pending timeout)", s)
	}
}

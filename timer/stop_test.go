package timer

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestStopReturnsTheTimeoutsThatNeverRan(t *testing.T) {
	tm := New(Config{Tick: time.Millisecond})
	var ran sync.WaitGroup
	ran.Add(10)
	for range 10 {
		if _, err := tm.NewTimeout(TaskFunc(func(*Timeout) { ran.Done() }), 0); err != nil {
			t.Fatal(err)
		}
	}
	want := map[*Timeout]bool{}
	var cancelled []*Timeout
	for i := range 100 {
		to, err := tm.NewTimeout(TaskFunc(func(*Timeout) { t.Error("a far task ran") }), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			if !to.Cancel() {
				t.Fatal("Cancel = false")
			}
			cancelled = append(cancelled, to)
		} else {
			want[to] = true
		}
	}
	done := make(chan struct{})
	go func() { ran.Wait(); close(done) }() // owned by this test; exits when the ten tasks have run
	awaitClosed(t, "the ten immediate tasks", done, 20*time.Second)

	unrun := stopTimer(t, tm)
	if len(unrun) != len(want) {
		t.Fatalf("Stop returned %d timeouts, want %d", len(unrun), len(want))
	}
	for _, to := range unrun {
		if !want[to] {
			t.Fatal("Stop returned a timeout that ran or was cancelled")
		}
		delete(want, to)
		if to.IsCancelled() || to.IsExpired() {
			t.Fatal("an unrun timeout reports cancelled or expired")
		}
		if !to.Cancel() {
			t.Fatal("Cancel of a timeout returned by Stop = false")
		}
	}
	for _, to := range cancelled {
		if to.Cancel() || !to.IsCancelled() {
			t.Fatal("a cancelled timeout changed state after Stop")
		}
	}
	if n := tm.Pending(); n != 0 {
		t.Fatalf("Pending after Stop = %d", n)
	}
	if _, err := tm.NewTimeout(TaskFunc(func(*Timeout) {}), 0); !errors.Is(err, ErrStopped) {
		t.Fatalf("NewTimeout after Stop: %v, want ErrStopped", err)
	}
	if again, err := tm.Stop(); again != nil || err != nil {
		t.Fatalf("second Stop = %v, %v; want nil, nil", again, err)
	}
}

func TestStopFromATaskIsRefused(t *testing.T) {
	tm := New(Config{Tick: time.Millisecond})
	got := make(chan error, 1)
	if _, err := tm.NewTimeout(TaskFunc(func(*Timeout) {
		_, err := tm.Stop()
		got <- err
	}), 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if !errors.Is(err, ErrStopFromTask) {
			t.Fatalf("Stop from a task: %v, want ErrStopFromTask", err)
		}
	case <-time.After(20 * time.Second):
		dumpGoroutines(t)
		t.Fatal("stall: Stop from a task did not return")
	}
	if _, err := tm.NewTimeout(TaskFunc(func(*Timeout) {}), 0); err != nil {
		t.Fatalf("the refused Stop stopped the timer: %v", err)
	}
	stopTimer(t, tm)
}

func TestStopBeforeTheFirstTimeoutStartsNothing(t *testing.T) {
	tm := New(Config{})
	if unrun, err := tm.Stop(); unrun != nil || err != nil {
		t.Fatalf("Stop = %v, %v", unrun, err)
	}
	if _, err := tm.NewTimeout(TaskFunc(func(*Timeout) {}), 0); !errors.Is(err, ErrStopped) {
		t.Fatalf("NewTimeout after Stop: %v, want ErrStopped", err)
	}
	if unrun, err := tm.Stop(); unrun != nil || err != nil {
		t.Fatalf("second Stop = %v, %v", unrun, err)
	}
}

package miniredis_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/locksmith-go/locksmith/future"
)

// Each kind's test has a waiter that is woken by a release. A waiter attempts again by itself after a bound (the
// holder's lease, a queue refresh, or about a second for semaphores and latches), so a wake-up is only shown by a
// waiter that returns sooner than that after the release, the release made right after the waiter was refused.

// wakeBound is how soon after the release a woken waiter returns in these tests: shorter than any bound after
// which a waiter attempts again by itself (the shortest is the fair lock's, 750 ms).
const wakeBound = 500 * time.Millisecond

// settles waits until cond holds, polling miniredis's state, which sends no event to wait for; it fails the test
// after a few seconds.
func settles(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// subscribed waits until a client is subscribed to channel: a waiter subscribes before its attempt.
func subscribed(t *testing.T, srv *miniredis.Miniredis, channel string) {
	t.Helper()
	settles(t, "a subscription to "+channel, func() bool { return srv.PubSubNumSub(channel)[channel] > 0 })
}

// queued waits until the list key (a queue of waiters) has n entries: a waiter is queued by its refused attempt.
func queued(t *testing.T, srv *miniredis.Miniredis, key string, n int) {
	t.Helper()
	settles(t, "a waiter in "+key, func() bool {
		l, _ := srv.List(key)
		return len(l) == n
	})
}

// stillWaiting fails the test when f completed: its resource is not available yet.
func stillWaiting[T any](t *testing.T, what string, f *future.Future[T]) {
	t.Helper()
	if f.IsDone() {
		v, err := f.Get(context.Background())
		t.Fatalf("%s returned before the release: %v, %v", what, v, err)
	}
}

// woken returns f's result, which must come within wakeBound: the release woke the waiter.
func woken[T any](t *testing.T, what string, f *future.Future[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wakeBound)
	defer cancel()
	v, err := f.Get(ctx)
	if err != nil {
		t.Fatalf("%s was not woken within %v of the release: %v", what, wakeBound, err)
	}
	return v
}

// noKeysLeft checks that nothing but the keys named in keep is left on the server once every hold is released.
// The plain lock's queue keeps its set of deadlines for up to 10 s after it empties (a grant made to a waiter is
// recorded there until the waiter claims it); on miniredis that time passes only when the test forwards the clock.
func noKeysLeft(t *testing.T, srv *miniredis.Miniredis, keep ...string) {
	t.Helper()
	srv.FastForward(10 * time.Second)
	if keys := srv.Keys(); !slices.Equal(keys, keep) {
		t.Fatalf("keys left after the last Unlock: %v, want %v", keys, keep)
	}
}

// Package future provides Future and Promise, the asynchronous results of this
// project: the Go counterpart of Redisson's RFuture. Every asynchronous call of
// packages conn and rlock returns a *Future, and each blocking call is that
// asynchronous call followed by Get.
//
// # Model
//
// A Promise is the write side and a Future the read side of one result, a value
// of type T and an error. The future is completed exactly once: the first of any
// number of concurrent Complete, Succeed or Fail calls wins and the others report
// false. A future can be observed four ways, all safe for concurrent use:
//
//   - Get(ctx) blocks until completion or until ctx ends;
//   - Done() returns a channel closed on completion, for select;
//   - Peek and IsDone look without blocking;
//   - OnComplete registers a callback that runs once with the result.
//
// Then, Compose and All derive new futures from existing ones without blocking.
//
// # Drivers
//
// A completer may attach a Driver to a promise (Promise.SetDriver): a Get on the
// future then lets the driver do the completing work on the Get's own goroutine
// before parking. Package conn uses it so that a sequential caller reads its own
// reply from the socket, with no goroutine hand-off. Futures derived by Then and
// Compose inherit their source's driver; observers that do not call Get
// (OnComplete, Done) tell the driver that the result is awaited unattended, so it
// produces it by itself. A promise completed by callbacks on a sequence of other
// futures (a lock acquire: attempt, subscribe, attempt again) can take a Relay as
// its driver and register those callbacks with Follow, so that its Get drives
// each step in turn.
//
// # No goroutines
//
// The package never starts a goroutine. Callbacks run on the goroutine that
// completes the future (in package conn: a network event loop) or, when
// registered after completion, on the registering goroutine. Hence the one rule
// for callbacks: they must not block. It is enforced where it can be: inside a
// callback (a function given to OnComplete, Then or Compose, or RunAsCallback),
// Get on a pending future returns ErrInCallback at once instead of waiting, and
// package rlock's blocking calls do the same (see InCallback for how a callback
// is recognised, and its cost). Callbacks run exactly once each, in
// registration order, also when registered concurrently with completion (see
// Future.OnComplete). A panicking callback does not prevent the others from
// running; the completer re-panics afterwards with a *PanicError (see
// Promise.Complete).
//
// # Cost
//
// The transport aims at one allocation per Redis command, and that allocation is
// the promise: NewPromise allocates the promise with its future inside, and
// Future(), Complete, Get and Peek allocate nothing in steady state. A Get that
// has to block parks on a wake-up channel borrowed from a process-wide pool
// instead of creating a channel per future; the Done channel is created only if
// Done is called before completion. OnComplete allocates nothing for the first
// callback of a future (it is stored inline) and amortised slice growth for
// further ones; the closure passed in is the caller's allocation. The
// benchmarks are in bench_test.go; their figures are in bench/README.md
// ("future").
//
// Package future imports nothing of this project.
package future

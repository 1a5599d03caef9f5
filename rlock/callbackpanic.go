package rlock

import (
	"log/slog"

	"github.com/locksmith-go/locksmith/future"
)

// A panic in a caller's code that the client runs — a callback on a future the client returned, an Observer
// method — reports a bug in that code, but must not unwind through the client. The future package runs every
// callback of a future and then re-panics in the goroutine that completed it (future.Promise.Complete); here that
// goroutine is running the client's own work, which the unwinding would cut short: the release that completes one
// caller's Unlock and hands the lock to a waiter, the releases queued behind a re-entry, a shard's mutex. Other
// callers would then wait forever, and on the timer's worker the panic would end the program. The client logs
// such a panic (at Error, with its stack) and goes on, as package conn does for the callbacks its event loops run.

// complete completes p, whose future a caller holds, with (v, err), and keeps a panic in one of its callbacks from
// unwinding further (see above). It reports whether this call completed p (see future.Promise.Complete): Complete
// re-panics only after it completed p and ran every callback, so a recovered panic means that it did.
func complete[T any](log *slog.Logger, p *future.Promise[T], v T, err error) (won bool) {
	defer func() {
		if r := recover(); r != nil {
			won = true
			logCallbackPanic(log, "a callback of a future the client completed", r)
		}
	}()
	return p.Complete(v, err)
}

// succeed is complete with a value and no error.
func succeed[T any](log *slog.Logger, p *future.Promise[T], v T) bool {
	return complete(log, p, v, nil)
}

// fail is complete with err and the zero value.
func fail[T any](log *slog.Logger, p *future.Promise[T], err error) bool {
	var zero T
	return complete(log, p, zero, err)
}

// logCallbackPanic logs a panic recovered from the caller's code named by what.
func logCallbackPanic(log *slog.Logger, what string, r any) {
	log.Error("rlock: panic in "+what+" (fix it: it must not panic; the client logged it and went on)", "panic", r)
}

// loggerOf returns the logger of the first client behind locks that the package made, else slog's default: the
// multi-lock forms complete their callers' futures too, and their components may be any Locker (nil included,
// which the call reports).
func loggerOf(locks []Locker) *slog.Logger {
	for _, l := range locks {
		if o, ok := l.(interface{ client() *Client }); ok && !nilLocker(l) {
			if c := o.client(); c != nil {
				return c.log
			}
		}
	}
	return slog.Default()
}

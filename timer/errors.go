package timer

import (
	"errors"
	"strconv"
)

var (
	// ErrStopped is returned by NewTimeout when the Timer has been stopped (or is being stopped): the task was not
	// scheduled. Create a new Timer if scheduling must go on.
	ErrStopped = errors.New("timer: stopped; create a new Timer to schedule more tasks")

	// ErrTooManyPending is returned (wrapped in a *PendingLimitError) by NewTimeout when Config.MaxPending timeouts are
	// already pending: cancel timeouts that are no longer needed, or raise Config.MaxPending.
	ErrTooManyPending = errors.New("timer: too many pending timeouts; cancel unneeded timeouts or raise Config.MaxPending")

	// ErrStopFromTask is returned by Stop when it is called from a task running on the Timer's worker: Stop waits for
	// the worker to exit, which would deadlock. Call Stop from another goroutine.
	ErrStopFromTask = errors.New("timer: Stop called from a task on the timer's worker; call it from another goroutine")

	// ErrNilTask is returned by NewTimeout when the task is nil: pass a Task (or a TaskFunc) to run.
	ErrNilTask = errors.New("timer: nil task; pass a Task or TaskFunc to run")

	// ErrGroupClosed is returned by Group.After once the Group has been closed: the task was not scheduled, and the
	// caller settles what it stands for itself (its owner is closing).
	ErrGroupClosed = errors.New("timer: group closed; its owner is closing, settle the task instead of scheduling it")
)

// PendingLimitError is the error NewTimeout returns when the pending cap (Config.MaxPending) is reached. It matches
// ErrTooManyPending with errors.Is; use errors.As to read the limit.
type PendingLimitError struct {
	Limit int64 // Config.MaxPending of the Timer that refused the timeout
}

// Error implements error.
func (e *PendingLimitError) Error() string {
	return ErrTooManyPending.Error() + " (limit " + strconv.FormatInt(e.Limit, 10) + ")"
}

// Is reports whether target is ErrTooManyPending, so that errors.Is(err, ErrTooManyPending) holds.
func (e *PendingLimitError) Is(target error) bool { return target == ErrTooManyPending }

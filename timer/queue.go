package timer

import "sync/atomic"

// timeoutStack is a lock-free multi-producer, single-consumer stack of timeouts, linked through Timeout.link (an
// intrusive Treiber stack, so a push allocates nothing). Any goroutine may push; only the worker takes, and it always
// takes the whole stack at once with one Swap. Because no node is ever popped alone there is no ABA hazard, and a
// taken node is never pushed onto the same stack again (a timeout enters the add stack once, at NewTimeout, and the
// cancel stack at most once, on its one Scheduled->Cancelled transition).
//
// Why a stack and not a mutex-guarded slice: callers of NewTimeout and Cancel never wait for one another or for the
// worker (one CAS, retried only while another producer wins), and no per-entry slot is kept alive after the worker
// takes the batch.
type timeoutStack struct {
	head atomic.Pointer[Timeout]
}

// push adds t to the stack. Safe for concurrent use; never blocks. The caller must own t.link: it is written here
// before the CAS publishes t, and read by the worker only after it has taken the stack.
func (s *timeoutStack) push(t *Timeout) {
	for {
		old := s.head.Load()
		t.link = old
		if s.head.CompareAndSwap(old, t) {
			return
		}
	}
}

// takeAll empties the stack and returns its former top (newest first), linked through Timeout.link. Worker only.
func (s *timeoutStack) takeAll() *Timeout { return s.head.Swap(nil) }

// empty reports whether the stack holds nothing. Safe for concurrent use.
func (s *timeoutStack) empty() bool { return s.head.Load() == nil }

// reverse reverses a list linked through Timeout.link and returns its new head. Worker only: the add stack is taken
// newest first, and reversing it makes the worker place timeouts in the order NewTimeout accepted them, so two
// timeouts that fall due in the same tick run in that order, as in Netty.
func reverse(l *Timeout) *Timeout {
	var out *Timeout
	for l != nil {
		next := l.link
		l.link = out
		out = l
		l = next
	}
	return out
}

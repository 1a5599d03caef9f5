//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd) || locksmith_portable

package conn

// startDoorbells creates none: a doorbell needs a Unix socketpair that gnet enrolls as a connection. Every
// connection's bell stays nil, so kick wakes its loop with gnet's Wake, which runs OnTraffic and so flushes the
// same way, at the cost of a closure allocation per wake-up. Linux builds this path with
// the locksmith_portable tag, so the Linux test suite runs it too.
func (e *engine) startDoorbells(int) error { return nil }

// sound does nothing: without doorbells ring is never called, so d is always nil.
func (d *doorbell) sound() {}

// close does nothing: there are no doorbells to close.
func (d *doorbell) close() {}

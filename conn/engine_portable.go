//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd) || locksmith_portable

package conn

// writeDirect declines: without a non-blocking descriptor to write on from the calling goroutine (gnet's Windows
// connections are written by their loop; a gnet.Conn's Write is for the loop only), the caller marks a flush
// pending and wakes the loop, which writes the batch. Only the hand-off differs from the Unix path: an idle
// connection's command waits for one loop wake-up before it is written.
func (t *gnetTransport) writeDirect([]byte) (int, bool) { return 0, false }

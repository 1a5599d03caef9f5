package faultproxy

import (
	"net"
	"sync"
	"time"
)

const (
	chunkSize  = 32 << 10
	queueDepth = 16 // chunks a reader may run ahead of its writer
)

// chunk is bytes read from one side with their arrival time.
type chunk struct {
	data []byte
	at   time.Time
	held bool // read while its direction was withheld: never delivered (Withhold)
}

// link is one proxied connection: the client's socket and, once dialled, the
// server's.
type link struct {
	p      *Proxy
	client net.Conn
	done   chan struct{} // closed by close; every pump and wait watches it

	mu     sync.Mutex // guards server and closed
	server net.Conn
	closed bool
}

func newLink(p *Proxy, client net.Conn) *link {
	return &link{p: p, client: client, done: make(chan struct{})}
}

// run waits out a partition, dials the target and pumps both directions until
// the link closes.
func (l *link) run() {
	defer l.p.wg.Done()
	defer l.p.remove(l)
	f := l.p.f
	if !f.wait(l.done, func(now time.Time) (bool, time.Time) { return f.partitionedLocked(now) }) {
		return
	}
	// The target is on loopback: the dial ends at once (connected or
	// refused), so it is bounded by DefaultDialTimeout alone; a link closed
	// meanwhile is noticed right after.
	server, err := net.DialTimeout("tcp", l.p.target, DefaultDialTimeout)
	if err != nil {
		l.close(true)
		return
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = server.Close()
		return
	}
	l.server = server
	l.mu.Unlock()

	up := make(chan chunk, queueDepth)
	down := make(chan chunk, queueDepth)
	var wg sync.WaitGroup
	// Owner of the four pumps: run. Each ends when its socket fails or the
	// link closes; run waits for all of them.
	wg.Go(func() { l.read(l.client, up, 0) })
	wg.Go(func() { l.write(server, up, 0) })
	wg.Go(func() { l.read(server, down, 1) })
	wg.Go(func() { l.write(l.client, down, 1) })
	wg.Wait()
}

// read copies src into chunks on ch until src fails or the link closes; it
// closes ch so the writer closes the link after delivering what was read. dir
// is the direction ch carries.
func (l *link) read(src net.Conn, ch chan<- chunk, dir int) {
	defer close(ch)
	f := l.p.f
	for {
		buf := make([]byte, chunkSize)
		n, err := src.Read(buf)
		if n > 0 {
			l.p.read[dir].Add(int64(n))
			f.mu.Lock()
			held := f.withhold[dir]
			f.mu.Unlock()
			if held {
				l.p.withheld[dir].Add(int64(n))
			}
			select {
			case ch <- chunk{data: buf[:n], at: time.Now(), held: held}:
			case <-l.done:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// write delivers chunks to dst, each when its direction is neither stalled nor
// partitioned and its latency has passed, honouring CutAfter budgets.
func (l *link) write(dst net.Conn, ch <-chan chunk, dir int) {
	f := l.p.f
	var gen uint64
	budget := int64(-1)
	for {
		var c chunk
		var ok bool
		select {
		case c, ok = <-ch:
		case <-l.done:
			return
		}
		if !ok {
			l.close(false) // the other side closed: close this one too
			return
		}
		if !f.wait(l.done, func(now time.Time) (bool, time.Time) {
			if part, end := f.partitionedLocked(now); part {
				return true, end
			}
			if f.stalled[dir] || c.held {
				return true, time.Time{}
			}
			if due := c.at.Add(f.latency[dir]); now.Before(due) {
				return true, due
			}
			return false, time.Time{}
		}) {
			return
		}
		f.mu.Lock()
		if f.cutGen[dir] != gen {
			gen = f.cutGen[dir]
			budget = f.cut[dir]
		}
		f.mu.Unlock()
		data := c.data
		cut := false
		if budget >= 0 {
			if int64(len(data)) >= budget {
				data = data[:budget]
				cut = true
			}
			budget -= int64(len(data))
		}
		if len(data) > 0 {
			if _, err := dst.Write(data); err != nil {
				l.close(false)
				return
			}
		}
		if cut {
			l.close(false)
			return
		}
	}
}

// close closes both sockets once (with RST when reset) and wakes every pump.
func (l *link) close(reset bool) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	server := l.server
	l.mu.Unlock()
	for _, c := range []net.Conn{l.client, server} {
		if c == nil {
			continue
		}
		if reset {
			abort(c)
		} else {
			_ = c.Close()
		}
	}
	close(l.done)
}

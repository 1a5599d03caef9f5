package faultproxy

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// DefaultDialTimeout bounds the proxy's dial to the target for each accepted
// connection (after any partition has ended).
const DefaultDialTimeout = 5 * time.Second

// Proxy forwards connections from its loopback address to a target and
// injects faults on command. All methods are safe for concurrent use; the
// fault controls never block.
type Proxy struct {
	target string
	ln     net.Listener
	f      *faults

	mu     sync.Mutex // guards links and closed
	links  map[*link]struct{}
	closed bool

	accepted atomic.Int64
	withheld [2]atomic.Int64 // bytes read while their direction was withheld, by direction
	read     [2]atomic.Int64 // bytes read, by direction
	wg       sync.WaitGroup  // the accept loop and every link's run
}

// New listens on 127.0.0.1 on a free port and forwards each accepted
// connection to target ("host:port"). The caller must call Close.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, ln: ln, f: newFaults(), links: make(map[*link]struct{})}
	p.wg.Add(1)
	// Owner: the Proxy. Ends when Close closes the listener; Close waits.
	go p.acceptLoop()
	return p, nil
}

// Start is New for a test: it calls t.Fatal on error and registers Close
// with t.Cleanup.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("faultproxy: close: %v", err)
		}
	})
	return p
}

// Addr returns the proxy's "127.0.0.1:PORT" address, to give to clients.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address connections are forwarded to.
func (p *Proxy) Target() string { return p.target }

// SetLatency delays every chunk in the given direction(s) by d after it was
// read (0 removes the delay); chunks already queued are delayed by the new
// value. A latency spike is SetLatency(Both, d) followed later by
// SetLatency(Both, 0).
func (p *Proxy) SetLatency(dir Direction, d time.Duration) {
	p.f.update(func(f *faults) { forDirs(dir, func(i int) { f.latency[i] = max(d, 0) }) })
}

// Stall stops forwarding in the given direction(s) without closing anything:
// the peer's writes are read until a small queue fills, then TCP backpressure
// holds them. Unstall resumes and delivers everything in order.
func (p *Proxy) Stall(dir Direction) {
	p.f.update(func(f *faults) { forDirs(dir, func(i int) { f.stalled[i] = true }) })
}

// Unstall resumes forwarding in the given direction(s).
func (p *Proxy) Unstall(dir Direction) {
	p.f.update(func(f *faults) { forDirs(dir, func(i int) { f.stalled[i] = false }) })
}

// Withhold makes every connection keep back, for good, what it reads in the
// given direction(s) from now until Restore (or Release): those bytes, and all
// that follows them on the same connection, are never delivered, and the
// connection stays open until one side closes it. Connections that read
// nothing meanwhile are unaffected. With Downstream, a reply that the server
// sent is lost on its connection alone, while the client's other connections
// go on: the client sees a command that ran and was never answered.
func (p *Proxy) Withhold(dir Direction) {
	p.f.update(func(f *faults) { forDirs(dir, func(i int) { f.withhold[i] = true }) })
}

// Release ends Withhold for what is read from now on; what was withheld stays
// withheld.
func (p *Proxy) Release(dir Direction) {
	p.f.update(func(f *faults) { forDirs(dir, func(i int) { f.withhold[i] = false }) })
}

// Partition black-holes the proxy for d (until Restore when d <= 0): existing
// connections forward nothing in either direction, new connections are
// accepted but not dialled upstream. Nothing is closed; when the partition
// ends, queued bytes are delivered and waiting connections are dialled.
func (p *Proxy) Partition(d time.Duration) {
	p.f.update(func(f *faults) {
		f.partition = true
		f.partEnd = time.Time{}
		if d > 0 {
			f.partEnd = time.Now().Add(d)
		}
	})
}

// CutAfter lets every connection (current and new) forward n more bytes in
// the given direction(s) and then closes it: with Downstream a reply is cut
// mid-frame, with Upstream a pipeline is cut mid-request. Restore lifts it.
func (p *Proxy) CutAfter(dir Direction, n int64) {
	p.f.update(func(f *faults) {
		forDirs(dir, func(i int) {
			f.cut[i] = max(n, 0)
			f.cutGen[i]++
		})
	})
}

// Refuse makes the proxy reset every new connection at once (on) or accept
// them again (off), as a server that is down behind a live address.
func (p *Proxy) Refuse(on bool) { p.f.update(func(f *faults) { f.refuse = on }) }

// Restore removes every fault: no latency, no stall, no withholding, no
// partition, no cut, no refusal. Queued bytes are delivered at once, except
// those already withheld (Withhold).
func (p *Proxy) Restore() {
	p.f.update(func(f *faults) {
		f.latency = [2]time.Duration{}
		f.stalled = [2]bool{}
		f.withhold = [2]bool{}
		f.partition = false
		f.partEnd = time.Time{}
		for i := range f.cut {
			if f.cut[i] >= 0 {
				f.cut[i] = -1
				f.cutGen[i]++
			}
		}
		f.refuse = false
	})
}

// DropAll closes every current connection on both sides (FIN) and returns
// how many there were. New connections are accepted as usual.
func (p *Proxy) DropAll() int { return p.closeLinks(false) }

// ResetAll aborts every current connection on both sides with a TCP RST
// (SO_LINGER 0) and returns how many there were.
func (p *Proxy) ResetAll() int { return p.closeLinks(true) }

func (p *Proxy) closeLinks(reset bool) int {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.close(reset)
	}
	return len(links)
}

// Active returns the number of open client connections.
func (p *Proxy) Active() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Withheld returns how many bytes the proxy has read and withheld (Withhold)
// in the given direction(s) so far: a test waits for it to grow to know that
// a reply was taken out of the way before it lifts the fault.
func (p *Proxy) Withheld(dir Direction) int64 {
	var n int64
	forDirs(dir, func(i int) { n += p.withheld[i].Load() })
	return n
}

// Read returns how many bytes the proxy has read in the given direction(s) so far, whether it delivered them yet
// or not: a test that stalled a direction waits for it to grow to know that the client sent something meanwhile.
func (p *Proxy) Read(dir Direction) int64 {
	var n int64
	forDirs(dir, func(i int) { n += p.read[i].Load() })
	return n
}

// Accepted returns how many connections the proxy has accepted in total.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Close stops listening, closes every connection and waits until all of the
// proxy's goroutines have returned. A second Close returns nil.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.closeLinks(false)
	p.wg.Wait()
	return err
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		p.accepted.Add(1)
		p.f.mu.Lock()
		refuse := p.f.refuse
		p.f.mu.Unlock()
		if refuse {
			abort(c)
			continue
		}
		l := newLink(p, c)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = c.Close()
			return
		}
		p.links[l] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		// Owner: the Proxy. Ends when the link is closed (by either peer, a
		// fault or Close); Close waits through p.wg.
		go l.run()
	}
}

func (p *Proxy) remove(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// abort closes c with a TCP RST.
func abort(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

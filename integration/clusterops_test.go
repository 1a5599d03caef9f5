package integration

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// Cluster operations for the topology tests: slot migration by hand (what redis-cli --cluster reshard does), and
// MONITOR, to see exactly which commands a master ran.

// anotherMaster returns a running master other than src.
func anotherMaster(t testing.TB, ctx context.Context, cl *redistest.Cluster, src *redistest.Server) *redistest.Server {
	t.Helper()
	m, err := cl.OtherMaster(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// migrateSlot moves slot from src to dst as redis-cli --cluster reshard does (redistest.Migration), MIGRATE of the
// slot's keys in batches of 10 until src has none left; between runs after each batch (nil: nothing). It reports
// how many keys it moved.
func migrateSlot(t testing.TB, ctx context.Context, cl *redistest.Cluster, slot int, src, dst *redistest.Server,
	between func()) int {
	t.Helper()
	m, err := cl.StartMigration(ctx, slot, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	moved, err := m.MoveAll(ctx, 10, between)
	if err == nil {
		err = m.Finish(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	return moved
}

// monitored is a MONITOR connection to one server, collecting the commands clients ran (not those run inside
// scripts).
type monitored struct {
	c    net.Conn
	wg   sync.WaitGroup
	mu   sync.Mutex
	cmds [][]string
}

// startMonitor opens a MONITOR connection to s; stop ends it and returns what it saw.
func startMonitor(t testing.TB, s *redistest.Server) *monitored {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	if _, err := c.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("MONITOR on %s: %q, %v", s.Addr(), line, err)
	}
	m := &monitored{c: c}
	m.wg.Add(1)
	go func() { // owned by the test through m: ends when stop closes the connection, and stop waits for it
		defer m.wg.Done()
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			// 1700000000.123456 [0 127.0.0.1:50000] "EVALSHA" "..." ...; commands run by scripts say [0 lua].
			_, rest, ok := strings.Cut(line, "] ")
			if !ok || strings.Contains(line[:len(line)-len(rest)], " lua]") {
				continue
			}
			if args := monitorArgs(strings.TrimRight(rest, "\r\n")); len(args) > 0 {
				m.mu.Lock()
				m.cmds = append(m.cmds, args)
				m.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { m.stop() })
	return m
}

// stop closes the connection and returns the commands seen. Safe to call twice.
func (m *monitored) stop() [][]string {
	m.c.Close()
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmds
}

// monitorArgs splits a MONITOR line's quoted arguments ("a" "b\"c" "\x00"), undoing Redis's escapes.
func monitorArgs(s string) []string {
	var args []string
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			return args
		}
		s = s[i+1:]
		var b strings.Builder
		for len(s) > 0 && s[0] != '"' {
			if s[0] == '\\' && len(s) > 1 {
				switch s[1] {
				case 'n':
					b.WriteByte('\n')
				case 'r':
					b.WriteByte('\r')
				case 't':
					b.WriteByte('\t')
				case 'a':
					b.WriteByte('\a')
				case 'b':
					b.WriteByte('\b')
				case 'x':
					if len(s) >= 4 {
						if v, err := strconv.ParseUint(s[2:4], 16, 8); err == nil {
							b.WriteByte(byte(v))
							s = s[4:]
							continue
						}
					}
					b.WriteByte('x')
				default:
					b.WriteByte(s[1])
				}
				s = s[2:]
				continue
			}
			b.WriteByte(s[0])
			s = s[1:]
		}
		args = append(args, b.String())
		if len(s) > 0 {
			s = s[1:]
		}
	}
}

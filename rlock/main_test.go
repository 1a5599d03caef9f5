package rlock

import (
	"flag"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// The package starts no goroutine of its own, and every Client its tests and examples create is closed: nothing
// may outlive them. gnet's global worker pool (started at package init) is not ours: IgnoreCurrent.
//
// The examples connect to LOCKSMITH_REDIS_ADDR, as a program would to its own Redis: TestMain starts a throwaway
// redis-server for them and sets the variable (unless it is set already), so that their outputs are checked on
// every run. Without redis-server and without a server at the address, the examples are skipped, with a notice.
func TestMain(m *testing.M) {
	ignore := goleak.IgnoreCurrent()
	flag.Parse()
	stop := exampleServer()
	code := m.Run()
	stop()
	if code == 0 {
		if err := goleak.Find(ignore); err != nil {
			fmt.Fprintf(os.Stderr, "rlock: goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// exampleServer makes LOCKSMITH_REDIS_ADDR point at a server for the examples, or skips them; the returned func
// stops what it started.
func exampleServer() (stop func()) {
	if addr := os.Getenv("LOCKSMITH_REDIS_ADDR"); addr != "" {
		if !answers(addr) {
			skipExamples("nothing answers at LOCKSMITH_REDIS_ADDR=" + addr)
		}
		return func() {}
	}
	srv, err := redistest.StartServer()
	if err != nil {
		if !answers("127.0.0.1:6379") {
			skipExamples(err.Error())
		}
		return func() {}
	}
	os.Setenv("LOCKSMITH_REDIS_ADDR", srv.Addr())
	os.Setenv("LOCKSMITH_EXAMPLES_FLUSHALL", "1") // our own server: each example may start from an empty keyspace
	return func() {
		os.Unsetenv("LOCKSMITH_REDIS_ADDR")
		os.Unsetenv("LOCKSMITH_EXAMPLES_FLUSHALL")
		srv.Close()
	}
}

// answers reports whether a TCP server accepts connections at addr.
func answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// skipExamples adds the examples to -test.skip.
func skipExamples(why string) {
	fmt.Fprintf(os.Stderr, "rlock: skipping the examples: %s (set LOCKSMITH_REDIS_ADDR to a scratch Redis server)\n", why)
	skip := "^Example"
	if old := flag.Lookup("test.skip").Value.String(); old != "" {
		skip = old + "|" + skip
	}
	_ = flag.Set("test.skip", skip)
}

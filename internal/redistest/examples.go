package redistest

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Runnable examples connect to a Redis server the way a program does, from its
// configuration, and print what the documentation promises. So that they can
// be copied as they are and still have their // Output: checked, they read the
// address from these environment variables, which ServeExamples sets.
const (
	// ExamplesAddrEnv names the server's host:port; an example falls back to
	// 127.0.0.1:6379 without it.
	ExamplesAddrEnv = "LOCKSMITH_REDIS_ADDR"
	// ExamplesFlushEnv is set (to "1") when the server is a throwaway one
	// started for the examples, which may then empty it (FLUSHALL) to start
	// from a known keyspace. Never set for a server of the user's.
	ExamplesFlushEnv = "LOCKSMITH_EXAMPLES_FLUSHALL"
)

// ServeExamples is the whole TestMain of a package with runnable examples: it
// makes ExamplesAddrEnv point at a server, runs the tests and examples, stops
// what it started, fails the run if a goroutine outlived them (goroutines that
// existed before, such as gnet's worker pool started at package init, are not
// counted), and exits with the result. It does not return.
//
// The server is the one ExamplesAddrEnv already names, if it is set (the
// examples are skipped, with a notice, when nothing answers there); else a
// throwaway redis-server started here, with ExamplesFlushEnv set; else, when
// redis-server cannot start, 127.0.0.1:6379 if something answers there, and
// otherwise the examples are skipped with a notice (the tests still run).
func ServeExamples(m *testing.M) {
	ignore := goleak.IgnoreCurrent()
	flag.Parse()
	stop := exampleServer()
	code := m.Run()
	stop()
	if code == 0 {
		if err := goleak.Find(ignore); err != nil {
			fmt.Fprintf(os.Stderr, "%s: goroutine leak: %v\n", binaryName(), err)
			code = 1
		}
	}
	os.Exit(code)
}

// exampleServer makes ExamplesAddrEnv point at a server for the examples, or
// skips them; the returned func stops what it started.
func exampleServer() (stop func()) {
	if addr := os.Getenv(ExamplesAddrEnv); addr != "" {
		if !answers(addr) {
			skipExamples("nothing answers at " + ExamplesAddrEnv + "=" + addr)
		}
		return func() {}
	}
	srv, err := StartServer()
	if err != nil {
		if !answers("127.0.0.1:6379") {
			skipExamples(err.Error())
		}
		return func() {}
	}
	os.Setenv(ExamplesAddrEnv, srv.Addr())
	os.Setenv(ExamplesFlushEnv, "1")
	return func() {
		os.Unsetenv(ExamplesAddrEnv)
		os.Unsetenv(ExamplesFlushEnv)
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
	fmt.Fprintf(os.Stderr, "%s: skipping the examples: %s (set %s to a scratch Redis server)\n",
		binaryName(), why, ExamplesAddrEnv)
	skip := "^Example"
	if old := flag.Lookup("test.skip").Value.String(); old != "" {
		skip = old + "|" + skip
	}
	_ = flag.Set("test.skip", skip)
}

// binaryName names the test binary in messages: "rlock" for rlock.test.
func binaryName() string {
	return strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
}

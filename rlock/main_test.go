package rlock

import (
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// The package starts no goroutine of its own, and every Client its tests and examples create is closed: nothing
// may outlive them (gnet's global worker pool, started at package init, is not ours).
//
// The examples connect to LOCKSMITH_REDIS_ADDR, as a program would to its own Redis: TestMain starts a throwaway
// redis-server for them and sets the variable (unless it is set already), so that their outputs are checked on
// every run. Without redis-server and without a server at the address, the examples are skipped, with a notice.
// redistest.ServeExamples does all of this for every package with examples.
func TestMain(m *testing.M) { redistest.ServeExamples(m) }

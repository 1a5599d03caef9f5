package conn_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// Cluster operations for the tests: slot migration by hand (the steps redis-cli --cluster reshard runs) and error
// counters read from the servers, so a test can prove that a redirection actually happened.

// mustDo runs an admin command and fails the test on an error.
func mustDo(t testing.TB, ctx context.Context, s *redistest.Server, args ...string) {
	t.Helper()
	if _, err := s.Do(ctx, args...); err != nil {
		t.Fatalf("%s on %s: %v", strings.Join(args, " "), s.Addr(), err)
	}
}

// otherMaster returns a master other than src.
func otherMaster(t testing.TB, ctx context.Context, cl *redistest.Cluster, src *redistest.Server) *redistest.Server {
	t.Helper()
	m, err := cl.OtherMaster(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// migration is a redistest.Migration whose steps fail the test on an error.
type migration struct {
	t   testing.TB
	ctx context.Context
	m   *redistest.Migration
}

// startMigration puts slot in the IMPORTING state on dst and MIGRATING on src.
func startMigration(t testing.TB, ctx context.Context, cl *redistest.Cluster, slot int, src, dst *redistest.Server) migration {
	t.Helper()
	m, err := cl.StartMigration(ctx, slot, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	return migration{t, ctx, m}
}

// moveKeys moves keys from the source to the destination with MIGRATE.
func (m migration) moveKeys(keys ...string) {
	m.t.Helper()
	if err := m.m.MoveKeys(m.ctx, keys...); err != nil {
		m.t.Fatal(err)
	}
}

// moveAll moves every key of the slot still on the source, and reports how many it moved.
func (m migration) moveAll() int {
	m.t.Helper()
	n, err := m.m.MoveAll(m.ctx, 100, nil)
	if err != nil {
		m.t.Fatal(err)
	}
	return n
}

// finish assigns the slot to the destination on every master, ending the migration.
func (m migration) finish() {
	m.t.Helper()
	if err := m.m.Finish(m.ctx); err != nil {
		m.t.Fatal(err)
	}
}

// errorCount returns how many error replies starting with prefix (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) s has sent
// (INFO errorstats).
func errorCount(t testing.TB, ctx context.Context, s *redistest.Server, prefix string) int {
	t.Helper()
	info, err := s.Info(ctx, "errorstats")
	if err != nil {
		t.Fatalf("INFO errorstats on %s: %v", s.Addr(), err)
	}
	v, ok := info["errorstat_"+prefix]
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(v, "count="))
	return n
}

// commandCount returns how many times s ran cmd (INFO commandstats, lower-case name).
func commandCount(t testing.TB, ctx context.Context, s *redistest.Server, cmd string) int {
	t.Helper()
	info, err := s.Info(ctx, "commandstats")
	if err != nil {
		t.Fatalf("INFO commandstats on %s: %v", s.Addr(), err)
	}
	v, ok := info["cmdstat_"+cmd]
	if !ok {
		return 0
	}
	calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
	n, _ := strconv.Atoi(calls)
	return n
}

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

// nodeID returns a cluster node's ID.
func nodeID(t testing.TB, ctx context.Context, s *redistest.Server) string {
	t.Helper()
	id, err := s.DoString(ctx, "CLUSTER", "MYID")
	if err != nil {
		t.Fatalf("CLUSTER MYID on %s: %v", s.Addr(), err)
	}
	return id
}

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
	ms, err := cl.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m != src {
			return m
		}
	}
	t.Fatal("no other master")
	return nil
}

// startMigration puts slot in the IMPORTING state on dst and MIGRATING on src.
func startMigration(t testing.TB, ctx context.Context, slot int, src, dst *redistest.Server) {
	t.Helper()
	s := strconv.Itoa(slot)
	mustDo(t, ctx, dst, "CLUSTER", "SETSLOT", s, "IMPORTING", nodeID(t, ctx, src))
	mustDo(t, ctx, src, "CLUSTER", "SETSLOT", s, "MIGRATING", nodeID(t, ctx, dst))
}

// migrateKeys moves keys from src to dst with MIGRATE.
func migrateKeys(t testing.TB, ctx context.Context, src, dst *redistest.Server, keys ...string) {
	t.Helper()
	args := []string{"MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port()), "", "0", "5000", "KEYS"}
	if _, err := src.Do(ctx, append(args, keys...)...); err != nil {
		t.Fatalf("MIGRATE %v: %v", keys, err)
	}
}

// migrateSlotKeys moves every key of slot still on src to dst, and reports how many it moved.
func migrateSlotKeys(t testing.TB, ctx context.Context, slot int, src, dst *redistest.Server) int {
	t.Helper()
	moved := 0
	for {
		keys, err := src.DoStrings(ctx, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(slot), "100")
		if err != nil {
			t.Fatalf("GETKEYSINSLOT: %v", err)
		}
		if len(keys) == 0 {
			return moved
		}
		migrateKeys(t, ctx, src, dst, keys...)
		moved += len(keys)
	}
}

// finishMigration assigns slot to dst on every master (dst first, as redis-cli does), ending the migration.
func finishMigration(t testing.TB, ctx context.Context, cl *redistest.Cluster, slot int, src, dst *redistest.Server) {
	t.Helper()
	s, id := strconv.Itoa(slot), nodeID(t, ctx, dst)
	mustDo(t, ctx, dst, "CLUSTER", "SETSLOT", s, "NODE", id)
	mustDo(t, ctx, src, "CLUSTER", "SETSLOT", s, "NODE", id)
	ms, err := cl.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m != src && m != dst {
			mustDo(t, ctx, m, "CLUSTER", "SETSLOT", s, "NODE", id)
		}
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

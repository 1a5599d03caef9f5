package rlock

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"testing"

	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// TestScriptsAreTheOnesThePackageRuns checks every exported script against the conn.Script value the package
// sends: same source, same SHA-1, and the SHA-1 is the source's; and that every script the package sends is in
// the table Scripts reports.
func TestScriptsAreTheOnesThePackageRuns(t *testing.T) {
	got := Scripts()
	if len(got) != len(scripts.All) || len(sent) != len(scripts.All) {
		t.Errorf("Scripts returned %d scripts, the package sends %d, the table has %d", len(got), len(sent),
			len(scripts.All))
	}
	inTable := map[*scripts.Script]bool{}
	for i, e := range scripts.All {
		inTable[e] = true
		s := got[i]
		cs := sent[e]
		if cs == nil {
			t.Errorf("%s: in the table, but the package never makes it (newScript)", e.Name)
			continue
		}
		if s.Name != e.Name || s.Source != cs.Source() || s.SHA1 != cs.SHA() {
			t.Errorf("%s: exported source/SHA differ from the script the package sends (SHA %s, want %s)",
				s.Name, s.SHA1, cs.SHA())
		}
		sum := sha1.Sum([]byte(s.Source))
		if s.SHA1 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: SHA1 %s is not the SHA-1 of its source", s.Name, s.SHA1)
		}
	}
	for e := range sent {
		if !inTable[e] {
			t.Errorf("%s: the package sends it, but Scripts does not report it", e.Name)
		}
	}
	if got[0].Name != ScriptLockAcquire || got[1].Name != ScriptLockRelease {
		t.Errorf("Scripts starts with %q, %q; want the plain lock's acquire and release", got[0].Name, got[1].Name)
	}
}

// TestScriptsReturnsCopies checks that a caller changing what it got does not change the next answer.
func TestScriptsReturnsCopies(t *testing.T) {
	a := Scripts()
	a[0].Source, a[0].Keys[0] = "changed", "changed"
	b, ok := LookupScript(ScriptLockAcquire)
	if !ok || b.Source != scripts.LockAcquire.Source || b.Keys[0] != "lock name" {
		t.Fatalf("LookupScript after a change to Scripts' result: %+v, %t", b, ok)
	}
	if _, ok := LookupScript("lock.nosuch"); ok {
		t.Fatal("LookupScript found a script that does not exist")
	}
}

// TestExportedLockScriptsRunAsDocumented loads every script on a real server (its SHA-1 must be the one exported)
// and runs the plain lock's acquire and release with exactly the keys and arguments the constants document, as a
// benchmark would send them.
func TestExportedLockScriptsRunAsDocumented(t *testing.T) {
	srv := newScriptServer(t)
	for _, s := range Scripts() {
		if got := srv.str("SCRIPT", "LOAD", s.Source); got != s.SHA1 {
			t.Fatalf("%s: server SHA %s, exported %s", s.Name, got, s.SHA1)
		}
	}
	acq, _ := LookupScript(ScriptLockAcquire)
	rel, _ := LookupScript(ScriptLockRelease)
	const name, lease = "bench-lock", "30000"
	sub := srv.subscribe(channelName(name))
	n := strconv.Itoa
	keys := plainKeysOf(name)
	acqArgs := append([]string{"EVALSHA", acq.SHA1, n(len(acq.Keys))}, keys...)
	acqArgs = append(acqArgs, lease, ownerA, "", "publish")
	if len(acqArgs)-3-len(keys) != len(acq.Args) {
		t.Fatalf("the acquire documents %d arguments, the test sends %d", len(acq.Args), len(acqArgs)-3-len(keys))
	}
	wantBulk(t, "acquire", srv.do(acqArgs...), "1")
	relArgs := append([]string{"EVALSHA", rel.SHA1, n(len(rel.Keys))}, keys...)
	relArgs = append(relArgs, ownerA, "1", lease, "publish")
	wantInt(t, "release", srv.do(relArgs...), 1)
	sub.want(channelName(name), scripts.UnlockMessage)
	if k := srv.int("EXISTS", name); k != 0 {
		t.Fatalf("the lock survived its release (EXISTS %d)", k)
	}
}

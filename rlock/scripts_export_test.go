package rlock

import (
	"crypto/sha1"
	"encoding/hex"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/conn"
)

// TestScriptsAreTheOnesThePackageRuns checks every exported script against the conn.Script value the package
// sends: same source, same SHA-1, and the SHA-1 is the source's.
func TestScriptsAreTheOnesThePackageRuns(t *testing.T) {
	runs := map[string]*conn.Script{
		ScriptLockAcquire: acquireScript, ScriptLockRelease: releaseScript, "lock.leave": leaveScript,
		"lock.forceunlock": deletePublishScript, "lock.renew": renewScript, "lock.status": statusScript,
		"fencedlock.acquire": fencedAcquireScript,
		"fairlock.acquire":   fairAcquireScript, "fairlock.release": fairReleaseScript,
		"fairlock.leave": fairLeaveScript, "fairlock.forceunlock": fairForceUnlockScript,
		"rwlock.readacquire": rwReadAcquireScript, "rwlock.writeacquire": rwWriteAcquireScript,
		"rwlock.readrelease": rwReadReleaseScript, "rwlock.writerelease": rwWriteReleaseScript,
		"rwlock.renew": rwRenewScript, "rwlock.forceunlock": rwForceUnlockScript,
		"semaphore.acquire": semAcquireScript, "semaphore.release": semReleaseScript,
		"semaphore.trysetpermits": semTrySetScript, "semaphore.addpermits": semAddScript,
		"semaphore.drain":         semDrainScript,
		"permitsemaphore.acquire": pesAcquireScript, "permitsemaphore.release": pesReleaseScript,
		"permitsemaphore.updatelease": pesUpdateLeaseScript, "permitsemaphore.available": pesAvailableScript,
		"permitsemaphore.trysetpermits": pesTrySetScript, "permitsemaphore.addpermits": pesAddScript,
		"countdownlatch.trysetcount": latchTrySetScript, "countdownlatch.countdown": latchCountDownScript,
		"ratelimiter.acquire": rlAcquireScript, "ratelimiter.available": rlAvailableScript,
		"ratelimiter.trysetrate": rlTrySetScript, "ratelimiter.setrate": rlSetScript,
		"ratelimiter.fixedwindow": fixedWindowScript,
	}
	got := Scripts()
	if len(got) != len(runs) {
		t.Errorf("Scripts returned %d scripts, want %d", len(got), len(runs))
	}
	seen := map[string]bool{}
	for _, s := range got {
		if seen[s.Name] {
			t.Errorf("script name %q appears twice", s.Name)
		}
		seen[s.Name] = true
		want, ok := runs[s.Name]
		if !ok {
			t.Errorf("unexpected script %q", s.Name)
			continue
		}
		if s.Source != want.Source() || s.SHA1 != want.SHA() {
			t.Errorf("%s: exported source/SHA differ from the script the package sends (SHA %s, want %s)",
				s.Name, s.SHA1, want.SHA())
		}
		sum := sha1.Sum([]byte(s.Source))
		if s.SHA1 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: SHA1 %s is not the SHA-1 of its source", s.Name, s.SHA1)
		}
		if len(s.Keys) == 0 {
			t.Errorf("%s: no key described", s.Name)
		}
		if strings.HasPrefix(s.Source, publishLua) != (len(s.Args) > 0 && s.Args[len(s.Args)-1] == publishArg) {
			t.Errorf("%s: a script that publishes, and only one, must list the publish command as its last argument",
				s.Name)
		}
	}
	if got[0].Name != ScriptLockAcquire || got[1].Name != ScriptLockRelease {
		t.Errorf("Scripts starts with %q, %q; want the plain lock's acquire and release", got[0].Name, got[1].Name)
	}
}

// TestScriptsCoverEveryScript counts the conn.NewScript calls in the package's sources: a script added without an
// entry in Scripts fails here.
func TestScriptsCoverEveryScript(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	calls := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "newScript" {
					calls++
				}
			}
			return true
		})
	}
	if n := len(Scripts()); calls != n {
		t.Errorf("the package creates %d scripts with newScript, Scripts exports %d", calls, n)
	}
}

// TestScriptsReturnsCopies checks that a caller changing what it got does not change the next answer.
func TestScriptsReturnsCopies(t *testing.T) {
	a := Scripts()
	a[0].Source, a[0].Keys[0] = "changed", "changed"
	b, ok := LookupScript(ScriptLockAcquire)
	if !ok || b.Source != scriptSource(acquireSrc) || b.Keys[0] != "lock name" {
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
	sub.want(channelName(name), unlockMessage)
	if k := srv.int("EXISTS", name); k != 0 {
		t.Fatalf("the lock survived its release (EXISTS %d)", k)
	}
}

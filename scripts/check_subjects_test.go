// Package scripts holds the tests of the repository's shell scripts that make runs.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// check-subjects.sh against throw-away repositories: subjects made after the base are checked, older ones are
// not; a clean clone checks the same; without history, or without the base, it only warns.

// gitRepo is a throw-away repository whose git sees no user or system configuration.
type gitRepo struct {
	t   *testing.T
	dir string
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: check-subjects.sh only warns then")
	}
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

// gitEnv isolates git from the machine's configuration and names the author.
func gitEnv() []string {
	return append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com")
}

// git runs git in the repository and returns its trimmed output.
func (r *gitRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = r.dir, gitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit makes an empty commit with subject and returns its short hash.
func (r *gitRepo) commit(subject string) string {
	r.t.Helper()
	r.git("commit", "-q", "--allow-empty", "-m", subject)
	return r.git("rev-parse", "--short", "HEAD")
}

// checkSubjects runs the script in dir with args and returns its exit code and its output.
func checkSubjects(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	script, err := filepath.Abs("check-subjects.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	// The temporary directory may lie inside another repository: git must not look above dir for one.
	cmd.Dir, cmd.Env = dir, append(gitEnv(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	out, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("running check-subjects.sh: %v", err)
	}
	return 0, string(out)
}

// subject72 is a valid subject of exactly 72 characters, three of them multi-byte in UTF-8.
var subject72 = "rlock: ×—é " + strings.Repeat("x", 72-len([]rune("rlock: ×—é ")))

func TestCheckSubjectsAcceptsGoodSubjectsAfterTheBase(t *testing.T) {
	r := newGitRepo(t)
	r.commit("an old subject that breaks the rule and stays as it is, however long it happens to be")
	base := r.git("rev-parse", "HEAD")
	r.commit("rlock: clamp every duration read from the server")
	r.commit("docs, cmd/rlock: the grant channels' prefix is no longer a key")
	r.commit("adapters/rlockprom: count orphaned grants by outcome")
	r.commit("rlock: doc: a colon after the pkg is part of the change")
	r.commit(subject72)
	r.git("checkout", "-q", "-b", "side")
	r.commit("integration: a test on a side branch")
	r.git("checkout", "-q", "main")
	r.commit("conn: a change on main meanwhile")
	r.git("merge", "-q", "--no-ff", "-m", "Merge branch 'side'", "side")

	if code, out := checkSubjects(t, r.dir, base); code != 0 || out != "" {
		t.Fatalf("check-subjects.sh = %d, %q; want success in silence", code, out)
	}
}

func TestCheckSubjectsListsEveryBadSubject(t *testing.T) {
	r := newGitRepo(t)
	old := r.commit("fixed things before the rule")
	base := r.git("rev-parse", "HEAD")
	good := r.commit("rlock: a good subject")
	bad := map[string]string{
		r.commit("fix the flaky test"):                 "not of the form",
		r.commit("rlock:no space after the colon"):     "not of the form",
		r.commit("rlock - a dash instead of a colon"):  "not of the form",
		r.commit("Merge in a commit that merges none"): "not of the form",
		r.commit(subject72 + "y"):                      "73 characters, over 72",
		r.commit(": no pkg"):                           "not of the form",
		r.commit("rlock, : an empty pkg in the list"):  "not of the form",
	}

	code, out := checkSubjects(t, r.dir, base)
	if code != 1 {
		t.Fatalf("check-subjects.sh = %d, want 1\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1+len(bad) {
		t.Fatalf("check-subjects.sh listed %d lines, want a header and %d commits:\n%s", len(lines), len(bad), out)
	}
	for hash, why := range bad {
		found := false
		for _, l := range lines[1:] {
			if strings.HasPrefix(strings.TrimSpace(l), hash+" ") && strings.Contains(l, why) {
				found = true
			}
		}
		if !found {
			t.Errorf("commit %s is not listed with %q:\n%s", hash, why, out)
		}
	}
	for _, h := range []string{old, good} {
		if strings.Contains(out, h+" ") {
			t.Errorf("commit %s is listed, but it is before the base or good:\n%s", h, out)
		}
	}
}

// A clean clone has the whole history: it checks the same commits. A shallow clone without the base, and a tree
// without git history (a source tarball), only warn.
func TestCheckSubjectsInClonesAndWithoutHistory(t *testing.T) {
	r := newGitRepo(t)
	r.commit("init: the first commit")
	base := r.git("rev-parse", "HEAD")
	for i := 0; i < 3; i++ {
		r.commit("rlock: a change")
	}
	r.commit("a bad subject")

	clone := filepath.Join(t.TempDir(), "clone")
	r.git("clone", "-q", r.dir, clone)
	if code, out := checkSubjects(t, clone, base); code != 1 || !strings.Contains(out, "a bad subject") {
		t.Fatalf("in a clean clone: %d, %q; want the bad subject listed", code, out)
	}

	shallow := filepath.Join(t.TempDir(), "shallow")
	r.git("clone", "-q", "--depth", "2", "file://"+r.dir, shallow)
	if code, out := checkSubjects(t, shallow, base); code != 0 || !strings.Contains(out, "not in the history") {
		t.Fatalf("in a shallow clone: %d, %q; want a warning that the base is missing", code, out)
	}

	tarball := t.TempDir()
	if err := os.WriteFile(filepath.Join(tarball, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := checkSubjects(t, tarball); code != 0 || !strings.Contains(out, "no git history") {
		t.Fatalf("without git history: %d, %q; want a warning only", code, out)
	}
}

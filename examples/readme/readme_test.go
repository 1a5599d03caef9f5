// Package readme compiles the Go code of the repository's README, so that what a reader copies builds.
package readme

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goBlock matches a fenced Go block of Markdown and captures its code.
var goBlock = regexp.MustCompile("(?ms)^```go\n(.*?)^```")

// Every ```go block of the README is a complete Go file (a program, or a _test.go file when it has a Test
// function). Each is written into a package of its own in a scratch module that requires this repository's
// library (and the examples module's dependencies, miniredis among them), and go vet must accept it: it compiles
// the code, test files included, and reports unused imports and variables, so the README cannot drift from the
// API.
func TestREADMEGoBlocksCompile(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllSubmatch(readme, -1)
	if len(blocks) == 0 {
		t.Fatal("the README has no ```go block: this test checks nothing")
	}
	dir := scratchModule(t, root)
	for i, b := range blocks {
		code := b[1]
		if !bytes.HasPrefix(code, []byte("package ")) {
			t.Errorf("README Go block %d does not start with a package clause: make it a complete file, so it can be "+
				"copied and compiled as printed:\n%s", i+1, code)
			continue
		}
		name := "main.go"
		if bytes.Contains(code, []byte("\nfunc Test")) {
			name = "snippet_test.go"
		}
		pkg := filepath.Join(dir, fmt.Sprintf("block%d", i+1))
		if err := os.Mkdir(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, name), code, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if t.Failed() {
		return
	}
	vet := exec.Command("go", "vet", "./...") // go test puts its own GOROOT/bin first in PATH
	vet.Dir = dir
	// Offline and outside any workspace: every module the blocks may import is in this module's go.sum, and so
	// in the module cache once this test binary has been built.
	vet.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	if out, err := vet.CombinedOutput(); err != nil {
		t.Fatalf("the README's Go code does not compile (block N is the N-th ```go block):\n%s", out)
	}
}

// scratchModule creates a module in a temporary directory with this module's requirements and checksums, and the
// library replaced by the repository at root.
func scratchModule(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile("../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	mod := string(gomod)
	mod = strings.Replace(mod, "module github.com/locksmith-go/locksmith/examples", "module readmecheck", 1)
	mod = regexp.MustCompile(`(?m)^replace github.com/locksmith-go/locksmith => .*$`).
		ReplaceAllString(mod, "replace github.com/locksmith-go/locksmith => "+root)
	if !strings.Contains(mod, "=> "+root) {
		t.Fatalf("../go.mod has no replace directive for the library to point at %s", root)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

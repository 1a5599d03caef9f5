//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The end-to-end tests run the real binary, built once per test run from this package's source (with -race when
// the tests run with it), so that what they exercise is exactly what `go install ./cmd/rlock` installs.
var (
	buildOnce sync.Once
	buildDir  string // removed by TestMain's cleanup
	buildPath string
	buildErr  error
)

// rlockBinary returns the path of the rlock binary, building it on first use.
func rlockBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		}
		if buildDir, buildErr = os.MkdirTemp("", "rlock-e2e-"); buildErr != nil {
			return
		}
		buildPath = filepath.Join(buildDir, "rlock")
		args := []string{"build", "-o", buildPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command(goTool, append(args, ".")...).CombinedOutput()
		if err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		t.Fatalf("building rlock: %v", buildErr)
	}
	return buildPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// removeBuiltBinary removes the build directory at the end of the run.
func removeBuiltBinary() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

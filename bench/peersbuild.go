package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// moduleRoot finds the root of the locksmith checkout: the nearest directory
// above the working directory whose go.mod declares the locksmith module.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/locksmith-go/locksmith\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no locksmith checkout above the working directory (run from the repository, or pass -peers-dir)")
		}
		dir = parent
	}
}

// buildPeers builds the peers command (bench/peers: the peer libraries are in
// the bench module, never in the library's) into dir and returns the
// binary's path. It blocks for the
// build, bounded by ctx.
func buildPeers(ctx context.Context, peersDir, outDir string) (string, error) {
	if peersDir == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		peersDir = filepath.Join(root, "bench", "peers")
	}
	bin := filepath.Join(outDir, "peers")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = peersDir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the peers binary in %s: %v\n%s", peersDir, err, out.String())
	}
	return bin, nil
}

package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// topologyTimeoutFactor: a topology must be healthy within this many start
// bounds (30 s by default), its processes' starts included.
const topologyTimeoutFactor = 3

// topologyDirs creates a root temporary directory with n member
// subdirectories named prefix-0 ... prefix-(n-1), and the TLS material in the
// root when asked.
func topologyRoot(pattern string, o options) (string, *tlsMaterial, error) {
	root, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", nil, fmt.Errorf("redistest: creating a temporary directory: %w", err)
	}
	var tlsm *tlsMaterial
	if o.tls {
		if tlsm, err = newTLSMaterial(root); err != nil {
			os.RemoveAll(root)
			return "", nil, fmt.Errorf("redistest: generating TLS certificates: %w", err)
		}
	}
	return root, tlsm, nil
}

func memberDir(root, name string) (string, error) {
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("redistest: creating %s: %w", dir, err)
	}
	return dir, nil
}

// startAll starts the servers concurrently and waits for all of them; it
// returns the first error.
func startAll(servers []*Server) error {
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		// Owner: startAll; each goroutine ends when its server answered or
		// failed, and startAll waits for all of them.
		wg.Go(func() { errs[i] = s.firstStart() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// closeAll closes the servers concurrently (so the SIGTERM bounds overlap) and
// waits for all of them.
func closeAll(servers []*Server) error {
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		if s == nil {
			continue
		}
		// Owner: closeAll; each goroutine ends when its process has exited.
		wg.Go(func() { errs[i] = s.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitUntil calls cond until it returns nil or ctx ends. Topology state lives
// in other processes and there is no event to wait for, so it polls, with an
// interval growing from 10 to 100 ms.
func waitUntil(ctx context.Context, what string, cond func(ctx context.Context) error) error {
	delay := 10 * time.Millisecond
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("redistest: waiting for %s: %w (last state: %v)", what, ctx.Err(), err)
		case <-t.C:
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// running returns the servers whose process is running.
func running(servers []*Server) []*Server {
	var out []*Server
	for _, s := range servers {
		if s.Running() {
			out = append(out, s)
		}
	}
	return out
}

// byPort returns the server listening on port, or nil.
func byPort(servers []*Server, port int) *Server {
	for _, s := range servers {
		if s.Port() == port {
			return s
		}
	}
	return nil
}
